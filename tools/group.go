package tools

// group_by and group_by_date (docs/tools.md "Tools").
//
// Decisions where the spec is silent (docs/decisions.md):
//   - The pipeline always starts with a $match carrying the complete read
//     filter (caller where, canonical and agent filters, tenant, ACL — the
//     same filter count_objects uses), even when it is {}.
//   - Ties are broken by key (value sorts add _id ascending), so results
//     are deterministic.
//   - Keys are rendered like row values (dates as {"__type":"Date"}); a
//     missing or null value is the JSON null key (as MongoDB's $group and
//     Parse Server's aggregate); rows holding a hidden reference in the
//     grouped field form one group keyed by the redaction marker, after
//     every other (SECURITY.md "Hidden references").
//   - group_by_date: quarter keys are "YYYY-Qn"; week keys are ISO weeks
//     "YYYY-Www" (%G-W%V); timezone defaults to UTC; IANA names are checked
//     with the embedded tz database (time/tzdata), offsets as ±HH:MM.
//   - flatten_arrays adds {$unwind: "$field"} (documents whose array is
//     empty or missing contribute no key).

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // IANA timezones on systems without a tz database

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
)

// Group limits.
const (
	DefaultGroupLimit    = 200
	MaxGroupLimit        = 1000
	DefaultDistinctLimit = 1000
	MaxDistinctLimit     = 5000
)

// groupField is a validated field of a group/distinct call.
type groupField struct {
	name    string // as the caller wrote it (REST)
	storage string // storage path
	field   *parsedb.Field
}

// resolveGroupField checks a field argument: field policy first (internal
// floor → violation, _p_ → storage_form_field_ref, agent_fields,
// protectedFields), then syntax and type.
func resolveGroupField(d *Deps, cls *parsedb.Class, arg, name string) (*groupField, error) {
	if name == "" {
		return nil, invalid("%s is required", arg)
	}
	if err := d.Policy.CheckReadField(cls, name); err != nil {
		return nil, err
	}
	root, rest, dotted := strings.Cut(name, ".")
	switch root {
	case "_id":
		return nil, invalid("%s: use objectId, not _id", arg)
	case "_created_at":
		return nil, invalid("%s: use createdAt, not _created_at", arg)
	case "_updated_at":
		return nil, invalid("%s: use updatedAt, not _updated_at", arg)
	}
	if !parsedb.FieldPathRe.MatchString(name) {
		return nil, invalid("%s %q is not a valid field path (letters, digits and _, each dotted segment starting with a letter)", arg, truncate(name, 40))
	}
	f := cls.Field(root)
	if f == nil {
		switch root {
		case "objectId":
			f = &parsedb.Field{Name: root, Type: parsedb.TypeString}
		case "createdAt", "updatedAt":
			f = &parsedb.Field{Name: root, Type: parsedb.TypeDate}
		}
	}
	if f != nil && f.Name == "" {
		ff := *f
		ff.Name = root
		f = &ff
	}
	if f != nil {
		switch f.Type {
		case parsedb.TypeRelation:
			// The target is not named: it may be hidden or missing
			// (SECURITY.md "Hidden equals missing").
			return nil, invalid("%s: %s is a Relation; relations are not stored in the object, so they cannot be grouped (query the related class with $relatedTo instead)", arg, root)
		case parsedb.TypeACL:
			return nil, invalid("%s: ACL cannot be grouped", arg)
		}
		if dotted {
			switch f.Type {
			case parsedb.TypeObject, parsedb.TypeArray:
			default:
				return nil, invalid("%s: %s is a %s field; dotted paths only apply to Object and Array fields", arg, root, f.Type)
			}
		}
	}
	storage := parsedb.StorageFieldName(cls, root)
	if dotted {
		storage = root + "." + rest
	}
	gf := &groupField{name: name, storage: storage}
	if !dotted {
		gf.field = f
	}
	return gf, nil
}

func (g *groupField) isPointer() bool { return g.field != nil && g.field.Type == parsedb.TypePointer }
func (g *groupField) isArray() bool   { return g.field != nil && g.field.Type == parsedb.TypeArray }

// groupRequest is a parsed group_by / group_by_date call.
type groupRequest struct {
	className string
	field     *groupField
	op        string // count sum avg min max
	value     *groupField
	where     map[string]any
	flatten   bool
	sort      string
	limit     int
	dryRun    bool
	// redacted selects the rows whose key is redacted (nil: none can be):
	// they form one group, keyed by the marker.
	redacted bson.D
	// group_by_date
	interval string
	timezone string
}

// group_by's arguments, in the order they are checked.
type groupByIn struct {
	ClassName  string         `json:"class_name" arg:"class"`
	Field      string         `json:"field" arg:"required"`
	Operation  string         `json:"operation" arg:"enum=count|sum|avg|average|min|max,default=count"`
	ValueField string         `json:"value_field" jsonschema:"the field summed/averaged (not for count)"`
	Where      map[string]any `json:"where"`
	Flatten    bool           `json:"flatten_arrays" jsonschema:"count each element of an array field"`
	Sort       string         `json:"sort" arg:"enum=value_desc|value_asc|key_desc|key_asc,default=value_desc"`
	Limit      int            `json:"limit" arg:"default=DefaultGroupLimit,min=1,max=MaxGroupLimit"`
	DryRun     bool           `json:"dry_run"`
}

// group_by_date's arguments, in the order they are checked.
type groupByDateIn struct {
	ClassName  string         `json:"class_name" arg:"class"`
	Field      string         `json:"field" arg:"required" jsonschema:"a Date field, e.g. createdAt"`
	Interval   string         `json:"interval" arg:"required,enum=year|quarter|month|week|day|hour|minute|second"`
	Timezone   timezoneArg    `json:"timezone" jsonschema:"IANA name (Europe/Paris) or ±HH:MM; default UTC"`
	Operation  string         `json:"operation" arg:"enum=count|sum|avg|average|min|max,default=count"`
	ValueField string         `json:"value_field"`
	Where      map[string]any `json:"where"`
	// Flatten is accepted as group_by takes it, though group_by_date's
	// input schema has never listed it.
	Flatten bool   `json:"flatten_arrays" arg:"unlisted"`
	Sort    string `json:"sort" arg:"enum=value_desc|value_asc|key_desc|key_asc,default=key_asc"`
	Limit   int    `json:"limit" arg:"default=DefaultGroupLimit,min=1,max=MaxGroupLimit"`
	DryRun  bool   `json:"dry_run"`
}

// timezoneArg is group_by_date's timezone: an IANA name or ±HH:MM, checked
// by checkTimezone ("" = UTC).
type timezoneArg string

func (tz *timezoneArg) decodeArg(_ context.Context, args Args, name string, _ *argField) error {
	s, err := args.String(name, false)
	if err != nil {
		return err
	}
	s, err = checkTimezone(s)
	*tz = timezoneArg(s)
	return err
}

func (*timezoneArg) schema() string { return `"type":"string"` }

// groupOut is the output schema of group_by, and of group_by_date with its
// interval and timezone: the groups, or with dry_run the pipeline that
// would run (the result is Dynamic).
func groupOut(byDate bool) string {
	date := ""
	if byDate {
		date = `"interval":{"type":"string"},"timezone":{"type":"string"},`
	}
	return `{"type":"object","properties":{` + osNote + `,` + osClass + `,"field":{"type":"string"},"operation":{"type":"string"},"value_field":{"type":"string"},` + date +
		`"pointer_class":{"type":"string"},"limit":{"type":"integer"},"truncated":{"type":"boolean"},"group_count":{"type":"integer"},"groups":{"type":"array","items":{"type":"object","properties":{"key":{},"value":{"type":["number","null"]}},"required":["key"]}}` +
		osDryRun + `},"required":["class_name"],` + orDryRun("groups") + `}`
}

func (in groupByIn) request() *groupRequest {
	return &groupRequest{className: in.ClassName, op: in.Operation, where: in.Where, flatten: in.Flatten, sort: in.Sort, limit: in.Limit, dryRun: in.DryRun}
}

func (in groupByDateIn) request() *groupRequest {
	return &groupRequest{className: in.ClassName, op: in.Operation, where: in.Where, flatten: in.Flatten, sort: in.Sort, limit: in.Limit, dryRun: in.DryRun,
		interval: in.Interval, timezone: string(in.Timezone)}
}

// resolveGroupRequest checks r's fields (field, valueField) against the
// class and builds the read filter.
func resolveGroupRequest(ctx context.Context, d *Deps, r *groupRequest, field, valueField string) (*groupRequest, *readTarget, error) {
	if r.op == "average" {
		r.op = "avg"
	}
	byDate := r.interval != ""
	name, op := r.className, r.op
	schema, cls, err := d.resolveClass(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	r.className = cls.Name
	if r.field, err = resolveGroupField(d, cls, "field", field); err != nil {
		return nil, nil, err
	}
	if byDate {
		if err := checkDateField(cls, r.field); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case op != "count" && valueField == "":
		return nil, nil, invalid("operation %s needs value_field (the number field to %s)", op, op)
	case op != "count":
		if r.value, err = resolveGroupField(d, cls, "value_field", valueField); err != nil {
			return nil, nil, err
		}
		if f := r.value.field; f != nil {
			switch f.Type {
			case parsedb.TypePointer, parsedb.TypeRelation, parsedb.TypeArray, parsedb.TypeObject, parsedb.TypeGeoPoint, parsedb.TypeFile, parsedb.TypeBytes, parsedb.TypePolygon:
				return nil, nil, invalid("value_field %s is a %s field; %s needs a Number field%s", f.Name, f.Type, op, map[bool]string{true: " (or a Date/String for min/max)", false: ""}[op == "min" || op == "max"])
			}
		}
	}
	t, err := buildFilter(ctx, d, schema, cls, r.where, true)
	if err != nil {
		return nil, nil, err
	}
	nh, err := groupHiddenRefFilter(d, schema, cls, r.field, r.value)
	if err != nil {
		return nil, nil, err
	}
	valueNH, _ := groupHiddenRefFilter(d, schema, cls, nil, r.value)
	r.redacted = redactedKeyFilter(d.Policy.HiddenRefs(schema), cls, andFilters(t.Filter, valueNH), r.field)
	t.Filter = andFilters(t.Filter, nh)
	return r, t, nil
}

// redactedKeyFilter is filter narrowed to the rows whose value at key is
// redacted — a hidden reference or a reference to a missing class at, or
// above, the path (on an array: in any element). group_by, group_by_date
// and distinct show them as one key, the marker, after every other key
// (SECURITY.md "Hidden references"): one key whatever the references'
// classes and ids. nil when key cannot hold one.
func redactedKeyFilter(hidden *parsedb.HiddenRefs, cls *parsedb.Class, filter bson.D, key *groupField) bson.D {
	nh := hidden.NotHiddenRefAnyType(cls, key.name)
	if nh == nil {
		return nil
	}
	return andFilters(filter, bson.D{{Key: "$nor", Value: bson.A{bson.D{{Key: "$and", Value: nh}}}}})
}

// redactedMarker is the key of the redacted group, as rows show the value.
func redactedMarker() map[string]any { return map[string]any{"__redacted": true} }

// redactedGroup is the one group of the rows whose key is redacted, or
// nil when there are none. The pipeline groups them under one constant
// key; the fallback, where the database cannot run it, under a path no
// stored row has (below the string _id).
func redactedGroup(ctx context.Context, d *Deps, r *groupRequest, cls *parsedb.Class, inGo bool) (*keyed, error) {
	if r.redacted == nil {
		return nil, nil
	}
	one := *r
	one.field, one.interval, one.flatten, one.sort = &groupField{storage: "_id.none"}, "", false, "key_asc"
	var items []keyed
	var err error
	if !inGo {
		items, err = readKeyedRaw(ctx, d, cls, bson.A{
			bson.D{{Key: "$match", Value: r.redacted}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "value", Value: r.accumulator()}}}},
		}, true)
	}
	if inGo || err != nil && parsedb.AsNotSupported(err) != nil {
		docs, err := groupInGo(ctx, d, &one, cls, r.redacted)
		if err != nil {
			return nil, err
		}
		conv := newRowConverter(ctx, d, nil)
		items = items[:0]
		for _, doc := range docs {
			g, err := conv.keyed(doc, true)
			if err != nil {
				return nil, err
			}
			items = append(items, g)
		}
	} else if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	return &keyed{key: redactedMarker(), value: items[0].value}, nil
}

// groupHiddenRefFilter keeps hidden references out of a group/distinct
// (SECURITY.md "Hidden references"). A Pointer field (key or value_field)
// whose target class is hidden or missing is refused exactly as the where
// translator refuses it. Every other grouped path and value_field gets the
// not-a-hidden-reference conjunct, whatever its declared type (a typed
// field holds one only after schema drift): rows holding a hidden
// reference there belong to no real group (redactedKeyFilter selects them
// for the one redacted group). Grouping on the stored reference and
// blanking the key afterwards would still show how many hidden objects
// are referenced and which rows share one; a sub-path such as
// meta.credential.objectId would read an id, and $min/$max would compare
// ids. nil when nothing needs it.
func groupHiddenRefFilter(d *Deps, schema *parsedb.Schema, cls *parsedb.Class, key, value *groupField) (bson.D, error) {
	hidden := d.Policy.HiddenRefs(schema)
	var and bson.A
	for _, g := range []*groupField{key, value} {
		if g == nil {
			continue
		}
		if f := g.field; f != nil && f.Type == parsedb.TypePointer && d.Policy.TargetInvisible(schema, f.TargetClass) {
			return nil, toolerror.New(toolerror.InvalidQuery, "%s points to a class that does not exist or is not accessible: it cannot be used in a where", g.name)
		}
		and = append(and, hidden.NotHiddenRefAnyType(cls, g.name)...)
	}
	if len(and) == 0 {
		return nil, nil
	}
	return bson.D{{Key: "$and", Value: and}}, nil
}

var offsetRe = regexp.MustCompile(`^[+-](0[0-9]|1[0-4]):[0-5][0-9]$`)

// checkTimezone validates an IANA name or a ±HH:MM offset ("" = UTC).
func checkTimezone(tz string) (string, error) {
	if tz == "" || offsetRe.MatchString(tz) {
		return tz, nil
	}
	if tz != "Local" && len(tz) <= 64 && !strings.ContainsAny(tz, " \\") {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz, nil
		}
	}
	return "", invalid("timezone %q is neither an IANA timezone name (e.g. \"Europe/Paris\", \"America/New_York\", \"UTC\") nor an offset like \"+09:00\"", truncate(tz, 40))
}

// checkDateField refuses fields group_by_date cannot bucket.
func checkDateField(cls *parsedb.Class, g *groupField) error {
	f := g.field
	if f == nil {
		if strings.Contains(g.name, ".") {
			return nil // a date inside an Object field: the server decides
		}
		return invalid("field %s is not a field of %s; group_by_date needs a Date field (e.g. createdAt)", g.name, cls.Name)
	}
	switch f.Type {
	case parsedb.TypeDate:
		return nil
	case parsedb.TypePointer, parsedb.TypeArray, parsedb.TypeRelation:
		return invalid("group_by_date needs a Date field; %s is a %s field (use group_by for it)", g.name, f.Type)
	}
	return invalid("group_by_date needs a Date field; %s is a %s field", g.name, f.Type)
}

// dateFormats are $dateToString formats per interval (quarter is built
// separately).
var dateFormats = map[string]string{
	"year":   "%Y",
	"month":  "%Y-%m",
	"week":   "%G-W%V",
	"day":    "%Y-%m-%d",
	"hour":   "%Y-%m-%d %H:00",
	"minute": "%Y-%m-%d %H:%M",
	"second": "%Y-%m-%d %H:%M:%S",
}

// dateKey is the $group key expression of group_by_date.
func dateKey(storage, interval, tz string) any {
	date := "$" + storage
	toString := func(format string) bson.D {
		spec := bson.D{{Key: "format", Value: format}, {Key: "date", Value: date}}
		if tz != "" {
			spec = append(spec, bson.E{Key: "timezone", Value: tz})
		}
		return bson.D{{Key: "$dateToString", Value: spec}}
	}
	if interval == "quarter" {
		month := bson.D{{Key: "date", Value: date}}
		if tz != "" {
			month = append(month, bson.E{Key: "timezone", Value: tz})
		}
		quarter := bson.D{{Key: "$toString", Value: bson.D{{Key: "$toInt", Value: bson.D{{Key: "$ceil", Value: bson.D{{Key: "$divide", Value: bson.A{bson.D{{Key: "$month", Value: month}}, int32(3)}}}}}}}}}
		return bson.D{{Key: "$concat", Value: bson.A{toString("%Y"), "-Q", quarter}}}
	}
	return toString(dateFormats[interval])
}

// groupSort is the $sort of a group pipeline.
func groupSort(sort string) bson.D {
	switch sort {
	case "value_asc":
		return bson.D{{Key: "value", Value: int32(1)}, {Key: "_id", Value: int32(1)}}
	case "key_asc":
		return bson.D{{Key: "_id", Value: int32(1)}}
	case "key_desc":
		return bson.D{{Key: "_id", Value: int32(-1)}}
	}
	return bson.D{{Key: "value", Value: int32(-1)}, {Key: "_id", Value: int32(1)}}
}

// groupPipeline builds $match → ($unwind) → $group → $sort → $limit.
func groupPipeline(r *groupRequest, filter bson.D) bson.A {
	if filter == nil {
		filter = bson.D{}
	}
	p := bson.A{bson.D{{Key: "$match", Value: filter}}}
	if r.flatten && r.interval == "" {
		p = append(p, bson.D{{Key: "$unwind", Value: "$" + r.field.storage}})
	}
	var key any = "$" + r.field.storage
	if r.interval != "" {
		key = dateKey(r.field.storage, r.interval, r.timezone)
	}
	p = append(p,
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: key}, {Key: "value", Value: r.accumulator()}}}},
		bson.D{{Key: "$sort", Value: groupSort(r.sort)}},
		bson.D{{Key: "$limit", Value: int32(r.limit + 1)}},
	)
	return p
}

// accumulator is the $group accumulator of r's operation.
func (r *groupRequest) accumulator() bson.D {
	if r.op == "count" {
		return bson.D{{Key: "$sum", Value: int32(1)}}
	}
	return bson.D{{Key: "$" + r.op, Value: "$" + r.value.storage}}
}

func (r *groupRequest) params() map[string]any {
	p := map[string]any{"field": r.field.name, "operation": r.op, "sort": r.sort, "limit": r.limit}
	if r.value != nil {
		p["value_field"] = r.value.name
	}
	if len(r.where) > 0 {
		p["where"] = r.where
	}
	if r.flatten {
		p["flatten_arrays"] = true
	}
	if r.interval != "" {
		p["interval"] = r.interval
		tz := r.timezone
		if tz == "" {
			tz = "UTC"
		}
		p["timezone"] = tz
	}
	return p
}

// keyed is one group (or distinct value) read back.
type keyed struct {
	key    any
	value  any
	hidden bool
}

// readKeyed runs a group/distinct pipeline and renders _id (and value).
func readKeyed(ctx context.Context, d *Deps, tool string, cls *parsedb.Class, p bson.A, withValue bool) ([]keyed, error) {
	items, err := readKeyedRaw(ctx, d, cls, p, withValue)
	if err != nil {
		return nil, pipelineRunError(d, tool, err)
	}
	return items, nil
}

// readKeyedRaw is readKeyed with the database's error as it came.
func readKeyedRaw(ctx context.Context, d *Deps, cls *parsedb.Class, p bson.A, withValue bool) ([]keyed, error) {
	cur, err := d.Store.Aggregate(ctx, cls.Name, p)
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	conv := newRowConverter(ctx, d, nil)
	var out []keyed
	// Byte accounting while streaming, as query_class does: a few huge
	// values must not be held in memory before the response cap refuses
	// them.
	budget, used := d.Policy.MaxResponseBytes()-envelopeReserve, 0
	for cur.Next(ctx) {
		if used += len(cur.Current); used > budget {
			return nil, toolerror.New(toolerror.InvalidQuery, "the values exceed the %d-byte response cap after %d of them; lower limit, narrow the where, or group on a smaller field", d.Policy.MaxResponseBytes(), len(out))
		}
		g, err := conv.keyed(cur.Current, withValue)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	if err := cur.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// keyed renders one {_id, value} document.
func (c *rowConverter) keyed(doc bson.Raw, withValue bool) (keyed, error) {
	var k any
	// The second engine leaves _id out of a group whose key is missing
	// on every row; MongoDB gives it null.
	if id, err := doc.LookupErr("_id"); err == nil {
		if k, err = c.value(id); err != nil {
			return keyed{}, err
		}
	}
	g := keyed{key: k}
	if m, ok := k.(map[string]any); ok && m["__redacted"] == true {
		g.key, g.hidden = nil, true
	}
	if withValue {
		var err error
		if g.value, err = c.value(doc.Lookup("value")); err != nil {
			return keyed{}, err
		}
	}
	return g, nil
}

// GroupInGo runs a group_by (byDate false) or group_by_date call through
// the capability fallback whatever the database supports, for the test
// that proves it equal to the pipeline.
func GroupInGo(ctx context.Context, d *Deps, args Args, byDate bool) (any, error) {
	if byDate {
		var in groupByDateIn
		if err := decodeInto(ctx, args, &in); err != nil {
			return nil, err
		}
		return runGroupWith(ctx, d, in.request(), in.Field, in.ValueField, true)
	}
	var in groupByIn
	if err := decodeInto(ctx, args, &in); err != nil {
		return nil, err
	}
	return runGroupWith(ctx, d, in.request(), in.Field, in.ValueField, true)
}

// pointerKeys strips the "Class$" prefix of pointer keys when they all
// share one visible class and returns it ("" otherwise).
func pointerKeys(items []keyed) string {
	class := ""
	for _, it := range items {
		if it.hidden {
			return ""
		}
		s, ok := it.key.(string)
		if !ok {
			if it.key == nil {
				continue
			}
			return ""
		}
		c, id, ok := strings.Cut(s, "$")
		if !ok || c == "" || id == "" || (class != "" && c != class) {
			return ""
		}
		class = c
	}
	if class == "" {
		return ""
	}
	for i := range items {
		if s, ok := items[i].key.(string); ok {
			items[i].key = s[len(class)+1:]
		}
	}
	return class
}

// runGroupWith runs a group_by (or, with r.interval, group_by_date)
// request; inGo computes the groups from a find whatever the database
// supports.
func runGroupWith(ctx context.Context, d *Deps, req *groupRequest, field, valueField string, inGo bool) (Dynamic, error) {
	byDate := req.interval != ""
	tool := "group_by"
	if byDate {
		tool = "group_by_date"
	}
	r, t, err := resolveGroupRequest(ctx, d, req, field, valueField)
	if err != nil {
		return nil, err
	}
	p := groupPipeline(r, t.Filter)
	if r.dryRun {
		return dryRun(r.className, r.params(), p)
	}
	if err := d.Policy.CheckCollscan(ctx, d.Store, t.Class, t.Filter); err != nil {
		return nil, err
	}
	var items []keyed
	computedInGo := inGo
	if !inGo {
		items, err = readKeyedRaw(ctx, d, t.Class, p, true)
		if err != nil && parsedb.AsNotSupported(err) != nil {
			d.Log.Debug().Str("tool", tool).Msg("group pipeline not implemented by the database; computing the groups from a find")
			computedInGo = true
		} else if err != nil {
			return nil, pipelineRunError(d, tool, err)
		}
	}
	if computedInGo {
		docs, err := groupInGo(ctx, d, r, t.Class, t.Filter)
		if err != nil {
			return nil, pipelineRunError(d, tool, err)
		}
		conv := newRowConverter(ctx, d, nil)
		items = make([]keyed, 0, len(docs))
		budget, used := d.Policy.MaxResponseBytes()-envelopeReserve, 0
		for _, doc := range docs {
			// The same byte cap as the pipeline's groups.
			if used += len(doc); used > budget {
				return nil, toolerror.New(toolerror.InvalidQuery, "the values exceed the %d-byte response cap after %d of them; lower limit, narrow the where, or group on a smaller field", d.Policy.MaxResponseBytes(), len(items))
			}
			g, err := conv.keyed(doc, true)
			if err != nil {
				return nil, err
			}
			items = append(items, g)
		}
	}
	// The rows whose key is redacted form one group after every other
	// (as a sorted read places them), whatever the sort.
	if len(items) <= r.limit {
		rg, err := redactedGroup(ctx, d, r, t.Class, computedInGo)
		if err != nil {
			return nil, pipelineRunError(d, tool, err)
		}
		if rg != nil {
			items = append(items, *rg)
		}
	}
	ProgressFrom(ctx).Report(float64(len(items)), 0, fmt.Sprintf("%d groups built", len(items)))
	truncated := len(items) > r.limit
	if truncated {
		items = items[:r.limit]
	}
	pointerClass := ""
	if r.field.isPointer() {
		pointerClass = pointerKeys(items)
	}
	groups := make([]map[string]any, len(items))
	for i, it := range items {
		// A missing or null value is the JSON null key, as MongoDB's
		// $group and Parse Server's aggregate give it.
		groups[i] = map[string]any{"key": it.key, "value": it.value}
	}
	out := map[string]any{
		"class_name":  r.className,
		"field":       r.field.name,
		"operation":   r.op,
		"group_count": len(groups),
		"groups":      groups,
		"limit":       r.limit,
	}
	if r.value != nil {
		out["value_field"] = r.value.name
	}
	if byDate {
		out["interval"] = r.interval
		out["timezone"] = r.params()["timezone"]
	}
	if pointerClass != "" {
		out["pointer_class"] = pointerClass
	}
	if truncated {
		out["truncated"] = true
	}
	return out, nil
}

func groupByTool(ctx context.Context, d *Deps, in groupByIn) (Dynamic, error) {
	return runGroupWith(ctx, d, in.request(), in.Field, in.ValueField, false)
}

func groupByDateTool(ctx context.Context, d *Deps, in groupByDateIn) (Dynamic, error) {
	return runGroupWith(ctx, d, in.request(), in.Field, in.ValueField, false)
}
