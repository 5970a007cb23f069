package parsedb

// Geo operators of the where translator: GeoPoint values, $nearSphere with
// $maxDistance*, $within/$box, $geoWithin/$polygon/$centerSphere, $geoIntersects.

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

func geoFieldCheck(key string, f *Field, op, want string) error {
	if f != nil && f.Type != want {
		return invalidQuery("%s: %s needs a %s field, %s is a %s", key, op, want, key, f.Type)
	}
	return nil
}

// geoPoint converts {"__type":"GeoPoint","latitude","longitude"} to
// [longitude, latitude].
func geoPoint(key, op string, v any) (bson.A, error) {
	where := key
	if op != "" {
		where = key + ": " + op
	}
	m, ok := whereMap(v)
	if !ok {
		return nil, invalidQuery("%s needs a GeoPoint {\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}, got %s", where, whereDescribe(v))
	}
	if ty, _ := m["__type"].(string); ty != "GeoPoint" || len(m) != 3 {
		return nil, invalidQuery("%s needs a GeoPoint {\"__type\":\"GeoPoint\",\"latitude\":…,\"longitude\":…}", where)
	}
	lat, ok1 := whereFloat(m["latitude"])
	lng, ok2 := whereFloat(m["longitude"])
	if !ok1 || !ok2 {
		return nil, invalidQuery("%s: GeoPoint latitude and longitude must be numbers", where)
	}
	return lngLat(where, lng, lat)
}

func lngLat(where string, lng, lat float64) (bson.A, error) {
	if lat < -90 || lat > 90 || lng < -180 || lng > 180 || math.IsNaN(lat) || math.IsNaN(lng) {
		return nil, invalidQuery("%s: latitude must be within [-90, 90] and longitude within [-180, 180]", where)
	}
	return bson.A{lng, lat}, nil
}

// pointOrPair accepts a GeoPoint object or a [longitude, latitude] pair.
func pointOrPair(key, op string, v any) (bson.A, error) {
	if a, ok := whereArray(v); ok {
		if len(a) == 2 {
			lng, ok1 := whereFloat(a[0])
			lat, ok2 := whereFloat(a[1])
			if ok1 && ok2 {
				return lngLat(key+": "+op, lng, lat)
			}
		}
		return nil, invalidQuery("%s: %s points are GeoPoint objects or [longitude, latitude] pairs", key, op)
	}
	return geoPoint(key, op, v)
}

func maxDistance(key string, m map[string]any) (float64, bool, error) {
	var (
		dist  float64
		found string
	)
	for _, k := range []string{"$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if found != "" {
			return 0, false, invalidQuery("%s: use only one of %s and %s", key, found, k)
		}
		found = k
		d, ok := whereFloat(v)
		if !ok || d < 0 || math.IsNaN(d) || math.IsInf(d, 0) {
			return 0, false, invalidQuery("%s: %s must be a non-negative number", key, k)
		}
		switch k {
		case "$maxDistanceInMiles":
			d /= earthRadiusMiles
		case "$maxDistanceInKilometers":
			d /= earthRadiusKm
		}
		dist = d
	}
	return dist, found != "", nil
}

func geoBox(key string, v any) (bson.A, error) {
	a, ok := whereArray(v)
	if !ok || len(a) != 2 {
		return nil, invalidQuery("%s: $box needs [southwestGeoPoint, northeastGeoPoint]", key)
	}
	out := bson.A{}
	for _, p := range a {
		pt, err := geoPoint(key, "$box", p)
		if err != nil {
			return nil, err
		}
		out = append(out, pt)
	}
	return out, nil
}

func geoWithin(key string, v any) (bson.D, error) {
	m, ok := whereMap(v)
	if !ok || len(m) != 1 {
		return nil, invalidQuery("%s: $geoWithin needs exactly one of $box, $polygon, $centerSphere", key)
	}
	for op, arg := range m {
		switch op {
		case "$box":
			box, err := geoBox(key, arg)
			if err != nil {
				return nil, err
			}
			return bson.D{{Key: "$box", Value: box}}, nil
		case "$polygon":
			pts, err := polygonPoints(key, arg)
			if err != nil {
				return nil, err
			}
			return bson.D{{Key: "$polygon", Value: pts}}, nil
		case "$centerSphere":
			a, ok := whereArray(arg)
			if !ok || len(a) != 2 {
				return nil, invalidQuery("%s: $centerSphere needs [centerGeoPoint, radiusInRadians]", key)
			}
			center, err := pointOrPair(key, "$centerSphere", a[0])
			if err != nil {
				return nil, err
			}
			r, ok := whereFloat(a[1])
			if !ok || r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
				return nil, invalidQuery("%s: $centerSphere radius must be a non-negative number of radians", key)
			}
			return bson.D{{Key: "$centerSphere", Value: bson.A{center, r}}}, nil
		default:
			if isForbiddenWhereOp(op) {
				return nil, toolerror.Violationf("forbidden operator %s in $geoWithin", op)
			}
			return nil, invalidQuery("unknown operator %s in $geoWithin on field %s (allowed: $box, $polygon, $centerSphere)", op, key)
		}
	}
	return nil, invalidQuery("%s: $geoWithin needs exactly one of $box, $polygon, $centerSphere", key)
}

// polygonPoints accepts an array of ≥3 GeoPoints (or [lng,lat] pairs), or a
// Polygon object whose coordinates are REST [latitude, longitude] pairs.
func polygonPoints(key string, v any) (bson.A, error) {
	var pts bson.A
	if m, ok := whereMap(v); ok {
		coords, ok := whereArray(m["coordinates"])
		if ty, _ := m["__type"].(string); ty != "Polygon" || !ok || len(m) != 2 {
			return nil, invalidQuery("%s: $polygon needs an array of GeoPoints or {\"__type\":\"Polygon\",\"coordinates\":[[lat,lng],…]}", key)
		}
		for _, c := range coords {
			a, ok := whereArray(c)
			if !ok || len(a) != 2 {
				return nil, invalidQuery("%s: Polygon coordinates are [latitude, longitude] pairs", key)
			}
			lat, ok1 := whereFloat(a[0])
			lng, ok2 := whereFloat(a[1])
			if !ok1 || !ok2 {
				return nil, invalidQuery("%s: Polygon coordinates are [latitude, longitude] pairs", key)
			}
			pt, err := lngLat(key+": $polygon", lng, lat)
			if err != nil {
				return nil, err
			}
			pts = append(pts, pt)
		}
	} else {
		a, ok := whereArray(v)
		if !ok {
			return nil, invalidQuery("%s: $polygon needs an array of at least 3 GeoPoints", key)
		}
		for _, p := range a {
			pt, err := pointOrPair(key, "$polygon", p)
			if err != nil {
				return nil, err
			}
			pts = append(pts, pt)
		}
	}
	if len(pts) < 3 {
		return nil, invalidQuery("%s: $polygon needs at least 3 points", key)
	}
	return pts, nil
}
