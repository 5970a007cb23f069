package parsedb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// REST field types, as Parse's REST schema API names them.
const (
	TypeString   = "String"
	TypeNumber   = "Number"
	TypeBoolean  = "Boolean"
	TypeDate     = "Date"
	TypeObject   = "Object"
	TypeArray    = "Array"
	TypeGeoPoint = "GeoPoint"
	TypeFile     = "File"
	TypeBytes    = "Bytes"
	TypePolygon  = "Polygon"
	TypePointer  = "Pointer"
	TypeRelation = "Relation"
	TypeACL      = "ACL"
)

// Field is one field of a class.
type Field struct {
	Name         string
	Type         string // REST type
	TargetClass  string // Pointer and Relation only
	Required     bool
	DefaultValue any
}

// Class is one class from _SCHEMA (or a built-in Parse class).
type Class struct {
	Name   string
	Fields map[string]*Field
	// Permissions is _metadata.class_permissions as stored (nil = none set,
	// which Parse treats as public).
	Permissions bson.M
	Indexes     bson.M
	// InSchema is false for built-in classes Parse knows even without a
	// _SCHEMA document.
	InSchema bool
}

// FieldNames are the class's field names, sorted.
func (c *Class) FieldNames() []string {
	return c.fieldNamesWhere(func(*Field) bool { return true })
}

// fieldNamesWhere is FieldNames of the fields keep is true of: only those
// are collected and sorted (a create asks for the few with a default or
// required, of every field of the class).
func (c *Class) fieldNamesWhere(keep func(*Field) bool) []string {
	var names []string
	for n, f := range c.Fields {
		if keep(f) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Field returns a field by name, or nil.
func (c *Class) Field(name string) *Field {
	if c == nil {
		return nil
	}
	return c.Fields[name]
}

// IsBuiltIn reports whether the class is one of Parse's own (_User, _Role, …).
func (c *Class) IsBuiltIn() bool { return strings.HasPrefix(c.Name, "_") }

// Schema is a snapshot of all classes.
type Schema struct {
	Classes  map[string]*Class
	LoadedAt time.Time
}

// Class returns a class by exact name, or nil.
func (s *Schema) Class(name string) *Class { return s.Classes[name] }

// Names returns every class name, sorted.
func (s *Schema) Names() []string {
	names := make([]string, 0, len(s.Classes))
	for n := range s.Classes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultSchemaTTL is how long a loaded _SCHEMA is trusted before it is read
// again. Short enough that a class added in the dashboard shows up within a
// conversation, long enough that tool calls do not each re-read _SCHEMA.
const DefaultSchemaTTL = 30 * time.Second

// SchemaCache loads _SCHEMA lazily and refreshes it after a TTL.
type SchemaCache struct {
	store *Store
	ttl   time.Duration

	mu      sync.Mutex
	current *Schema
}

// NewSchemaCache builds a cache over a store.
func NewSchemaCache(store *Store, ttl time.Duration) *SchemaCache {
	return &SchemaCache{store: store, ttl: ttl}
}

// Get returns the current schema, loading it if it is missing or stale.
func (c *SchemaCache) Get(ctx context.Context) (*Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil && time.Since(c.current.LoadedAt) < c.ttl {
		return c.current, nil
	}
	s, err := c.load(ctx)
	if err != nil {
		if c.current != nil {
			// A transient failure keeps serving the last good schema.
			return c.current, nil
		}
		return nil, err
	}
	c.current = s
	return s, nil
}

// Refresh reloads the schema now unless the loaded one is younger than
// minAge: a write naming a class or field the cached schema lacks asks
// once, so a class or field Parse Server added moments ago is seen typed
// (minAge bounds how often a caller can make the server re-read _SCHEMA).
func (c *SchemaCache) Refresh(ctx context.Context, minAge time.Duration) (*Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil && time.Since(c.current.LoadedAt) < minAge {
		return c.current, nil
	}
	s, err := c.load(ctx)
	if err != nil {
		if c.current != nil {
			return c.current, nil
		}
		return nil, err
	}
	c.current = s
	return s, nil
}

// Invalidate forces the next Get to reload (after a schema-changing write).
func (c *SchemaCache) Invalidate() {
	c.mu.Lock()
	c.current = nil
	c.mu.Unlock()
}

func (c *SchemaCache) load(ctx context.Context) (*Schema, error) {
	cur, err := c.store.SchemaCollection().Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("reading _SCHEMA: %w", err)
	}
	defer cur.Close(ctx)
	s := &Schema{Classes: map[string]*Class{}, LoadedAt: time.Now()}
	for cur.Next(ctx) {
		var doc bson.M
		if err := cur.Decode(&doc); err != nil {
			return nil, fmt.Errorf("decoding _SCHEMA: %w", err)
		}
		cls := ClassFromSchemaDoc(doc)
		if cls != nil {
			s.Classes[cls.Name] = cls
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("reading _SCHEMA: %w", err)
	}
	for name, fields := range builtInFields {
		cls := s.Classes[name]
		if cls == nil {
			if name != "_User" && name != "_Role" && name != "_Session" && name != "_Installation" {
				continue
			}
			cls = &Class{Name: name, Fields: map[string]*Field{}}
			s.Classes[name] = cls
		}
		for fname, f := range fields {
			if _, ok := cls.Fields[fname]; !ok {
				ff := *f
				ff.Name = fname
				cls.Fields[fname] = &ff
			}
		}
	}
	return s, nil
}

// Fields every class has implicitly.
var defaultFields = map[string]*Field{
	"objectId":  {Type: TypeString},
	"createdAt": {Type: TypeDate},
	"updatedAt": {Type: TypeDate},
	"ACL":       {Type: TypeACL},
}

// Fields Parse adds to its built-in classes.
var builtInFields = map[string]map[string]*Field{
	"_User": {
		"username": {Type: TypeString}, "password": {Type: TypeString}, "email": {Type: TypeString},
		"emailVerified": {Type: TypeBoolean}, "authData": {Type: TypeObject},
	},
	"_Role": {
		"name": {Type: TypeString}, "users": {Type: TypeRelation, TargetClass: "_User"},
		"roles": {Type: TypeRelation, TargetClass: "_Role"},
	},
	"_Session": {
		"user": {Type: TypePointer, TargetClass: "_User"}, "installationId": {Type: TypeString},
		"sessionToken": {Type: TypeString}, "expiresAt": {Type: TypeDate}, "createdWith": {Type: TypeObject},
	},
	"_Installation": {
		"installationId": {Type: TypeString}, "deviceToken": {Type: TypeString}, "channels": {Type: TypeArray},
		"deviceType": {Type: TypeString}, "pushType": {Type: TypeString}, "GCMSenderId": {Type: TypeString},
		"timeZone": {Type: TypeString}, "localeIdentifier": {Type: TypeString}, "badge": {Type: TypeNumber},
		"appVersion": {Type: TypeString}, "appName": {Type: TypeString}, "appIdentifier": {Type: TypeString},
		"parseVersion": {Type: TypeString},
	},
}

// ClassFromSchemaDoc converts one _SCHEMA document to a Class. It returns nil
// for documents without a string _id.
func ClassFromSchemaDoc(doc bson.M) *Class {
	name, _ := doc["_id"].(string)
	if name == "" || NameHoldsReference(name) {
		// Not a name Parse accepts; one holding a reference's shape would
		// name it in every listing (SECURITY.md "Names as data").
		return nil
	}
	cls := &Class{Name: name, Fields: map[string]*Field{}, InSchema: true}
	for fname, f := range defaultFields {
		ff := *f
		ff.Name = fname
		cls.Fields[fname] = &ff
	}
	var fieldOptions bson.M
	// The v2 driver decodes nested documents of a bson.M as bson.D: read
	// _metadata in either shape, as plain maps all the way down.
	if md, ok := deepM(doc["_metadata"]).(bson.M); ok {
		if cp, ok := md["class_permissions"].(bson.M); ok {
			cls.Permissions = cp
		}
		if ix, ok := md["indexes"].(bson.M); ok {
			cls.Indexes = ix
		}
		fieldOptions, _ = md["fields_options"].(bson.M)
	}
	for k, v := range doc {
		if k == "_id" || k == "_metadata" || NameHoldsReference(k) {
			continue
		}
		ts, ok := v.(string)
		if !ok {
			continue
		}
		f := FieldFromSchemaType(ts)
		f.Name = k
		if fo, ok := fieldOptions[k].(bson.M); ok {
			f.Required, _ = fo["required"].(bool)
			f.DefaultValue = fo["defaultValue"]
		}
		cls.Fields[k] = f
	}
	return cls
}

// deepM converts documents (bson.D or bson.M) to bson.M recursively,
// arrays included; other values are returned unchanged.
func deepM(v any) any {
	switch t := v.(type) {
	case bson.D:
		m := make(bson.M, len(t))
		for _, e := range t {
			m[e.Key] = deepM(e.Value)
		}
		return m
	case bson.M:
		m := make(bson.M, len(t))
		for k, x := range t {
			m[k] = deepM(x)
		}
		return m
	case map[string]any:
		m := make(bson.M, len(t))
		for k, x := range t {
			m[k] = deepM(x)
		}
		return m
	case bson.A:
		a := make(bson.A, len(t))
		for i, x := range t {
			a[i] = deepM(x)
		}
		return a
	}
	return v
}

// FieldFromSchemaType converts a _SCHEMA type string ("string", "*_User",
// "relation<Post>", legacy "map") to a Field.
func FieldFromSchemaType(t string) *Field {
	switch {
	case strings.HasPrefix(t, "*"):
		return &Field{Type: TypePointer, TargetClass: t[1:]}
	case strings.HasPrefix(t, "relation<") && strings.HasSuffix(t, ">"):
		return &Field{Type: TypeRelation, TargetClass: t[len("relation<") : len(t)-1]}
	}
	switch t {
	case "string":
		return &Field{Type: TypeString}
	case "number":
		return &Field{Type: TypeNumber}
	case "boolean":
		return &Field{Type: TypeBoolean}
	case "date":
		return &Field{Type: TypeDate}
	case "object", "map":
		return &Field{Type: TypeObject}
	case "array":
		return &Field{Type: TypeArray}
	case "geopoint":
		return &Field{Type: TypeGeoPoint}
	case "file":
		return &Field{Type: TypeFile}
	case "bytes":
		return &Field{Type: TypeBytes}
	case "polygon":
		return &Field{Type: TypePolygon}
	}
	// Unknown type strings are kept verbatim rather than guessed.
	return &Field{Type: t}
}

// SchemaTypeString is the inverse of FieldFromSchemaType, for writes.
func SchemaTypeString(f *Field) string {
	switch f.Type {
	case TypePointer:
		return "*" + f.TargetClass
	case TypeRelation:
		return "relation<" + f.TargetClass + ">"
	}
	return strings.ToLower(f.Type)
}
