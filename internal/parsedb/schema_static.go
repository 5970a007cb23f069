package parsedb

import (
	"math"
	"time"
)

// StaticSchemaCache is a SchemaCache that always returns s and never reads
// _SCHEMA: for tests of tools that need a schema but no database.
func StaticSchemaCache(s *Schema) *SchemaCache {
	if s.LoadedAt.IsZero() {
		s.LoadedAt = time.Now()
	}
	return &SchemaCache{ttl: time.Duration(math.MaxInt64), current: s}
}
