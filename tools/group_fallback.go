package tools

// The capability fallback of group_by and group_by_date (docs/decisions.md "Decisions
// where the spec is silent"): when the database answers NotImplemented to
// the group pipeline (FerretDB, the embedded demo database, has no date
// expressions and no $avg/$min/$max accumulators), the same groups are
// computed here from a streamed find that carries the pipeline's own $match
// filter (caller where, canonical and agent filters, tenant, ACL), with a
// projection of the two fields involved. The pipeline stays the primary
// path; the e2e suite proves both give the same answer on a real MongoDB.
//
// MongoDB semantics reproduced: missing and null keys form one null group;
// numbers group by value whatever their BSON type (1 and 1.0 are one key);
// $unwind drops missing, null and empty arrays and keeps a scalar as one
// element; $sum adds numbers only (integers stay integers until they
// overflow an int64), $avg averages numbers only (null when there are
// none), $min/$max compare in BSON order and ignore null and missing;
// $dateToString formats %Y %m %d %H %M %S %G %V in the timezone; the sort
// is the pipeline's, ties broken by key.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// MaxFallbackGroups bounds the groups the fallback holds in memory.
const MaxFallbackGroups = 100_000

// fallbackGroup accumulates one group.
type fallbackGroup struct {
	key   bson.RawValue
	count int64
	// sum: integers in isum while they fit, else the float sum.
	isum     int64
	fsum     float64
	fcomp    float64 // Neumaier compensation of fsum
	isFloat  bool
	nums     int64
	extreme  bson.RawValue // min or max so far
	hasValue bool
}

// groupInGo computes the groups of r over the documents matching filter.
// It returns documents {_id: key, value: v} in the pipeline's order, at
// most r.limit+1 of them, exactly as the pipeline would.
func groupInGo(ctx context.Context, d *Deps, r *groupRequest, cls *parsedb.Class, filter bson.D) ([]bson.Raw, error) {
	proj := bson.D{{Key: r.field.storage, Value: 1}}
	if r.value != nil && r.value.storage != r.field.storage {
		proj = append(proj, bson.E{Key: r.value.storage, Value: 1})
	}
	cur, err := d.Store.Find(ctx, cls.Name, parsedb.FindSpec{Filter: filter, Projection: proj, BatchSize: 1000})
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var loc *time.Location
	if r.interval != "" {
		if loc, err = fallbackLocation(r.timezone); err != nil {
			return nil, err
		}
	}
	groups := map[string]*fallbackGroup{}
	var order []*fallbackGroup
	keyPath := strings.Split(r.field.storage, ".")
	var valuePath []string
	if r.value != nil {
		valuePath = strings.Split(r.value.storage, ".")
	}
	prog := ProgressFrom(ctx)
	n := 0
	for cur.Next(ctx) {
		n++
		if n%5000 == 0 {
			prog.Report(float64(n), 0, fmt.Sprintf("%d rows grouped", n))
		}
		doc := cur.Current
		keys, err := r.groupKeys(pathValue(doc, keyPath), loc)
		if err != nil {
			return nil, err
		}
		var val bson.RawValue
		if valuePath != nil {
			val = pathValue(doc, valuePath)
		}
		for _, k := range keys {
			id := groupIdentity(k)
			g := groups[id]
			if g == nil {
				if len(groups) >= MaxFallbackGroups {
					return nil, toolerror.New(toolerror.InvalidQuery, "more than %d groups: narrow the where or group by a coarser field", MaxFallbackGroups)
				}
				g = &fallbackGroup{key: cloneValue(k)}
				groups[id] = g
				order = append(order, g)
			}
			g.add(r.op, val)
		}
	}
	if err := cur.Err(); err != nil {
		return nil, err
	}
	rows := make([]groupRow, len(order))
	for i, g := range order {
		rows[i].key, rows[i].value = g.key, g.result(r.op)
	}
	sort.SliceStable(rows, func(i, j int) bool { return r.groupBefore(rows[i], rows[j]) })
	if len(rows) > r.limit+1 {
		rows = rows[:r.limit+1]
	}
	out := make([]bson.Raw, len(rows))
	for i, row := range rows {
		b, err := bson.Marshal(bson.D{{Key: "_id", Value: row.key}, {Key: "value", Value: row.value}})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// groupKeys are the groups a document whose group field holds key falls in:
// its date bucket, each element of an array when flattening, else key.
func (r *groupRequest) groupKeys(key bson.RawValue, loc *time.Location) ([]bson.RawValue, error) {
	switch {
	case r.interval != "":
		k, err := dateBucket(key, r.interval, loc)
		if err != nil {
			return nil, err
		}
		return []bson.RawValue{k}, nil
	case r.flatten:
		return unwound(key), nil
	}
	return []bson.RawValue{key}, nil
}

// groupRow is one computed group.
type groupRow struct {
	key, value bson.RawValue
}

// groupBefore orders groups as the pipeline's sort does: by r.sort, then
// by key.
func (r *groupRequest) groupBefore(a, b groupRow) bool {
	switch r.sort {
	case "key_asc":
		return compareBSON(a.key, b.key) < 0
	case "key_desc":
		return compareBSON(a.key, b.key) > 0
	case "value_asc":
		if c := compareBSON(a.value, b.value); c != 0 {
			return c < 0
		}
	default:
		if c := compareBSON(a.value, b.value); c != 0 {
			return c > 0
		}
	}
	return compareBSON(a.key, b.key) < 0
}

func (g *fallbackGroup) add(op string, v bson.RawValue) {
	g.count++
	switch op {
	case "sum", "avg":
		switch v.Type {
		case bson.TypeInt32, bson.TypeInt64:
			i := v.AsInt64()
			if !g.isFloat {
				if s, ok := addInt64(g.isum, i); ok {
					g.isum = s
					g.nums++
					return
				}
				g.toFloat()
			}
			g.addFloat(float64(i))
			g.nums++
		case bson.TypeDouble:
			if !g.isFloat {
				g.toFloat()
			}
			g.addFloat(v.Double())
			g.nums++
		case bson.TypeDecimal128:
			if f, err := strconv.ParseFloat(v.Decimal128().String(), 64); err == nil {
				if !g.isFloat {
					g.toFloat()
				}
				g.addFloat(f)
				g.nums++
			}
		}
	case "min", "max":
		if v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined {
			return
		}
		if !g.hasValue {
			g.extreme, g.hasValue = cloneValue(v), true
			return
		}
		c := compareBSON(v, g.extreme)
		if op == "min" && c < 0 || op == "max" && c > 0 {
			g.extreme = cloneValue(v)
		}
	}
}

func (g *fallbackGroup) toFloat() {
	g.isFloat = true
	g.fsum, g.fcomp = float64(g.isum), 0
}

// addFloat is Neumaier's compensated sum (MongoDB sums doubles with extra
// precision too).
func (g *fallbackGroup) addFloat(x float64) {
	t := g.fsum + x
	if math.Abs(g.fsum) >= math.Abs(x) {
		g.fcomp += (g.fsum - t) + x
	} else {
		g.fcomp += (x - t) + g.fsum
	}
	g.fsum = t
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

func (g *fallbackGroup) result(op string) bson.RawValue {
	switch op {
	case "count":
		return intValue(g.count)
	case "sum":
		if g.isFloat {
			return doubleValue(g.fsum + g.fcomp)
		}
		return intValue(g.isum)
	case "avg":
		if g.nums == 0 {
			return bson.RawValue{Type: bson.TypeNull}
		}
		if g.isFloat {
			return doubleValue((g.fsum + g.fcomp) / float64(g.nums))
		}
		return doubleValue(float64(g.isum) / float64(g.nums))
	}
	if !g.hasValue {
		return bson.RawValue{Type: bson.TypeNull}
	}
	return g.extreme
}

func intValue(i int64) bson.RawValue {
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return bson.RawValue{Type: bson.TypeInt32, Value: binary.LittleEndian.AppendUint32(nil, uint32(int32(i)))}
	}
	return bson.RawValue{Type: bson.TypeInt64, Value: binary.LittleEndian.AppendUint64(nil, uint64(i))}
}

func doubleValue(f float64) bson.RawValue {
	return bson.RawValue{Type: bson.TypeDouble, Value: binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))}
}

func stringValue(s string) bson.RawValue {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(s)+1))
	b = append(append(b, s...), 0)
	return bson.RawValue{Type: bson.TypeString, Value: b}
}

func cloneValue(v bson.RawValue) bson.RawValue {
	if v.Type == 0 {
		return bson.RawValue{Type: bson.TypeNull}
	}
	return bson.RawValue{Type: v.Type, Value: append([]byte(nil), v.Value...)}
}

// pathValue is the value of an aggregation field path ("$a.b"): through
// arrays it collects the values of the elements that have the rest of the
// path, as MongoDB does. Missing is the zero RawValue.
func pathValue(doc bson.Raw, path []string) bson.RawValue {
	v, err := doc.LookupErr(path[0])
	if err != nil {
		return bson.RawValue{}
	}
	if len(path) == 1 {
		return v
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		return pathValue(v.Document(), path[1:])
	case bson.TypeArray:
		vals, err := v.Array().Values()
		if err != nil {
			return bson.RawValue{}
		}
		arr := bson.A{}
		for _, el := range vals {
			if el.Type != bson.TypeEmbeddedDocument {
				continue
			}
			if sub := pathValue(el.Document(), path[1:]); sub.Type != 0 {
				arr = append(arr, sub)
			}
		}
		t, b, err := bson.MarshalValue(arr)
		if err != nil {
			return bson.RawValue{}
		}
		return bson.RawValue{Type: t, Value: b}
	}
	return bson.RawValue{}
}

// unwound is what $unwind makes of a value: one key per array element, the
// value itself for a scalar, nothing for missing, null or [].
func unwound(v bson.RawValue) []bson.RawValue {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return nil
	case bson.TypeArray:
		vals, err := v.Array().Values()
		if err != nil || len(vals) == 0 {
			return nil
		}
		return vals
	}
	return []bson.RawValue{v}
}

// fallbackLocation is the timezone of a group_by_date call ("" = UTC).
func fallbackLocation(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if offsetRe.MatchString(tz) {
		h, _ := strconv.Atoi(tz[1:3])
		m, _ := strconv.Atoi(tz[4:6])
		secs := h*3600 + m*60
		if tz[0] == '-' {
			secs = -secs
		}
		return time.FixedZone(tz, secs), nil
	}
	return time.LoadLocation(tz)
}

// dateBucket is the group_by_date key of a value: null for missing or
// null, an invalid_query for a value that is not a date (MongoDB fails the
// same way).
func dateBucket(v bson.RawValue, interval string, loc *time.Location) (bson.RawValue, error) {
	var t time.Time
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return bson.RawValue{Type: bson.TypeNull}, nil
	case bson.TypeDateTime:
		t = time.UnixMilli(v.DateTime()).In(loc)
	case bson.TypeTimestamp:
		s, _ := v.Timestamp()
		t = time.Unix(int64(s), 0).In(loc)
	case bson.TypeObjectID:
		t = v.ObjectID().Timestamp().In(loc)
	default:
		return bson.RawValue{}, toolerror.New(toolerror.InvalidQuery, "group_by_date: a value of the field is a %s, not a date", v.Type)
	}
	var s string
	switch interval {
	case "year":
		s = fmt.Sprintf("%04d", t.Year())
	case "quarter":
		s = fmt.Sprintf("%04d-Q%d", t.Year(), (int(t.Month())+2)/3)
	case "month":
		s = fmt.Sprintf("%04d-%02d", t.Year(), int(t.Month()))
	case "week":
		y, w := t.ISOWeek()
		s = fmt.Sprintf("%04d-W%02d", y, w)
	case "day":
		s = fmt.Sprintf("%04d-%02d-%02d", t.Year(), int(t.Month()), t.Day())
	case "hour":
		s = fmt.Sprintf("%04d-%02d-%02d %02d:00", t.Year(), int(t.Month()), t.Day(), t.Hour())
	case "minute":
		s = fmt.Sprintf("%04d-%02d-%02d %02d:%02d", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute())
	default:
		s = fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second())
	}
	return stringValue(s), nil
}

// groupIdentity is the map key of a group key: numbers by value whatever
// their type, missing and null together, anything else by type and bytes.
func groupIdentity(v bson.RawValue) string {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return "null"
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		f, i, isInt := numberOf(v)
		if isInt {
			return "n" + strconv.FormatInt(i, 10)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return "n" + strconv.FormatInt(int64(f), 10)
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(rune(v.Type)) + string(v.Value)
}

// numberOf reads a numeric value.
func numberOf(v bson.RawValue) (f float64, i int64, isInt bool) {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64:
		i = v.AsInt64()
		return float64(i), i, true
	case bson.TypeDouble:
		return v.Double(), 0, false
	case bson.TypeDecimal128:
		f, _ = strconv.ParseFloat(v.Decimal128().String(), 64)
		return f, 0, false
	}
	return 0, 0, false
}

// typeRank is MongoDB's BSON comparison order of types.
func typeRank(t bson.Type) int {
	switch t {
	case bson.TypeMinKey:
		return 0
	case 0, bson.TypeNull, bson.TypeUndefined:
		return 1
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return 2
	case bson.TypeString, bson.TypeSymbol:
		return 3
	case bson.TypeEmbeddedDocument:
		return 4
	case bson.TypeArray:
		return 5
	case bson.TypeBinary:
		return 6
	case bson.TypeObjectID:
		return 7
	case bson.TypeBoolean:
		return 8
	case bson.TypeDateTime:
		return 9
	case bson.TypeTimestamp:
		return 10
	case bson.TypeRegex:
		return 11
	case bson.TypeMaxKey:
		return 13
	}
	return 12
}

// compareBSON compares two values in MongoDB's order (simple collation).
// Documents and arrays compare by their bytes, an approximation that only
// orders such keys among themselves.
func compareBSON(a, b bson.RawValue) int {
	ra, rb := typeRank(a.Type), typeRank(b.Type)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch ra {
	case 1:
		return 0
	case 2:
		fa, ia, aInt := numberOf(a)
		fb, ib, bInt := numberOf(b)
		if aInt && bInt {
			return cmpInt64(ia, ib)
		}
		switch {
		case math.IsNaN(fa) && math.IsNaN(fb):
			return 0
		case math.IsNaN(fa):
			return -1
		case math.IsNaN(fb):
			return 1
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	case 3:
		sa, _ := a.StringValueOK()
		sb, _ := b.StringValueOK()
		if a.Type == bson.TypeSymbol {
			sa = a.Symbol()
		}
		if b.Type == bson.TypeSymbol {
			sb = b.Symbol()
		}
		return strings.Compare(sa, sb)
	case 8:
		return cmpInt(boolInt(a.Boolean()), boolInt(b.Boolean()))
	case 9:
		return cmpInt64(a.DateTime(), b.DateTime())
	case 7:
		return bytes.Compare(a.Value, b.Value)
	}
	return bytes.Compare(a.Value, b.Value)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
