package parsedb

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// DirectWriter writes MongoDB itself, in Parse Server's storage format. It
// does not run Parse Server's Cloud Code triggers (docs/writes.md, "Writes").
//
// Steps are ordered so that a failure between any two leaves a valid,
// Parse-readable state: _SCHEMA gains a new field before any object holds
// it (a declared field without values is normal), the object is written in
// one single-document operation, and relation pairs are added after the
// object exists (an object with fewer relation pairs is normal).
// delete_class drops the _Join collections, then the empty class
// collection, and removes the _SCHEMA document last.
type DirectWriter struct {
	Store *Store
	// Now stamps _created_at/_updated_at (nil: time.Now).
	Now func() time.Time
	// StepHook, when set (tests), runs before each step ("schema",
	// "object", "joins", "drop_joins", "drop_collection", "schema_delete");
	// an error stops the write there, as a lost connection would.
	StepHook func(step string) error
}

// Kind names the write path.
func (w *DirectWriter) Kind() string { return "direct" }

// Plan encodes req, touching nothing.
func (w *DirectWriter) Plan(ctx context.Context, req *WriteRequest) (*WritePlan, error) {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	p, err := Plan(req, now().UTC().Truncate(time.Millisecond))
	if err != nil {
		return nil, err
	}
	if req.Op == WriteCreateClass {
		if req.Class != nil {
			return nil, ParseErr(ParseInvalidClassName, "Class %s already exists.", req.ClassName)
		}
	}
	if req.Op == WriteDeleteClass {
		if err := w.checkEmpty(ctx, req.ClassName); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (w *DirectWriter) checkEmpty(ctx context.Context, class string) error {
	n, err := w.Store.Collection(class).CountDocuments(ctx, bson.D{})
	if err != nil {
		return err
	}
	if n > 0 {
		return ParseErr(ParseClassNotEmpty, "Class %s is not empty, contains %d objects, cannot drop schema.", class, n)
	}
	return nil
}

func (w *DirectWriter) step(name string) error {
	if w.StepHook != nil {
		return w.StepHook(name)
	}
	return nil
}

// Apply performs a plan and returns the object as stored afterwards (nil
// for deletes).
func (w *DirectWriter) Apply(ctx context.Context, p *WritePlan) (bson.Raw, error) {
	if apply := directWrites[p.Op]; apply != nil {
		return apply(w, ctx, p)
	}
	return nil, errors.New("unknown write")
}

// directWrites apply each kind of write plan.
var directWrites = map[WriteOp]func(w *DirectWriter, ctx context.Context, p *WritePlan) (bson.Raw, error){
	WriteCreateObject: (*DirectWriter).createObject,
	WriteUpdateObject: (*DirectWriter).updateObject,
	WriteDeleteObject: (*DirectWriter).deleteObject,
	WriteCreateClass:  (*DirectWriter).createClass,
	WriteDeleteClass:  (*DirectWriter).deleteClass,
}

// createObject creates the object, its new fields first.
func (w *DirectWriter) createObject(ctx context.Context, p *WritePlan) (bson.Raw, error) {
	if err := w.addFields(ctx, p); err != nil {
		return nil, err
	}
	if err := w.step("object"); err != nil {
		return nil, err
	}
	// The plan holds the document already encoded (its Result, built by
	// planCreate from Document): inserting those bytes spares the driver
	// encoding it a second time.
	if _, err := w.Store.Collection(p.ClassName).InsertOne(ctx, p.Result); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return nil, ParseErr(ParseDuplicateValue, "A duplicate value for a field with unique values was provided")
		}
		return nil, err
	}
	if err := w.applyJoins(ctx, p); err != nil {
		return nil, err
	}
	return p.Result, nil
}

// updateObject updates the object and returns it as updated.
func (w *DirectWriter) updateObject(ctx context.Context, p *WritePlan) (bson.Raw, error) {
	if err := w.addFields(ctx, p); err != nil {
		return nil, err
	}
	if err := w.step("object"); err != nil {
		return nil, err
	}
	var out bson.Raw
	err := w.Store.Collection(p.ClassName).FindOneAndUpdate(ctx, p.Filter, p.Update,
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&out)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, ParseErr(ParseObjectNotFound, "Object not found.")
	}
	if err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return nil, ParseErr(ParseDuplicateValue, "A duplicate value for a field with unique values was provided")
		}
		return nil, err
	}
	if err := w.applyJoins(ctx, p); err != nil {
		return nil, err
	}
	return out, nil
}

// deleteObject deletes the object.
func (w *DirectWriter) deleteObject(ctx context.Context, p *WritePlan) (bson.Raw, error) {
	if err := w.step("object"); err != nil {
		return nil, err
	}
	res, err := w.Store.Collection(p.ClassName).DeleteOne(ctx, p.Filter)
	if err != nil {
		return nil, err
	}
	if res.DeletedCount == 0 {
		return nil, ParseErr(ParseObjectNotFound, "Object not found.")
	}
	return nil, nil
}

// createClass adds the class to _SCHEMA.
func (w *DirectWriter) createClass(ctx context.Context, p *WritePlan) (bson.Raw, error) {
	if err := w.step("schema"); err != nil {
		return nil, err
	}
	_, err := w.Store.SchemaCollection().InsertOne(ctx, p.SchemaDoc)
	if mongo.IsDuplicateKeyError(err) {
		return nil, ParseErr(ParseInvalidClassName, "Class %s already exists.", p.ClassName)
	}
	w.Store.Schema.Invalidate()
	return nil, err
}

// deleteClass drops an empty class: its join collections, its collection, its _SCHEMA entry.
func (w *DirectWriter) deleteClass(ctx context.Context, p *WritePlan) (bson.Raw, error) {
	if err := w.checkEmpty(ctx, p.ClassName); err != nil {
		return nil, err
	}
	defer w.Store.Schema.Invalidate()
	for _, j := range p.JoinCollections {
		if err := w.step("drop_joins"); err != nil {
			return nil, err
		}
		if err := w.Store.DB.Collection(w.Store.Prefix + j).Drop(ctx); err != nil {
			return nil, err
		}
	}
	if err := w.step("drop_collection"); err != nil {
		return nil, err
	}
	if err := w.Store.Collection(p.ClassName).Drop(ctx); err != nil {
		return nil, err
	}
	if err := w.step("schema_delete"); err != nil {
		return nil, err
	}
	_, err := w.Store.SchemaCollection().DeleteOne(ctx, bson.D{{Key: "_id", Value: p.ClassName}})
	return nil, err
}

// schemaEvolution serialises _SCHEMA field additions in this process: a
// conditional update ({field: {$exists: false}}) is atomic on MongoDB, but
// not on every engine (FerretDB read-modify-writes the document, so two
// concurrent additions could both "win" — conflicting types stored, other
// fields lost).
var schemaEvolution sync.Mutex

// schemaAddAttempts bounds the re-adds of a field another writer's
// document replacement dropped.
const schemaAddAttempts = 3

// addFields adds new fields to _SCHEMA as Parse's addFieldIfNotExists does,
// atomically as far as the engine allows: each field by a conditional
// update, then the document is read back and every added field must hold
// the type this write needs. A field another writer added meanwhile with
// another type refuses the write with Parse's schema-mismatch error (111);
// a field a concurrent replacement dropped is added again, and after
// schemaAddAttempts the write is refused the same way, before the object
// is written.
func (w *DirectWriter) addFields(ctx context.Context, p *WritePlan) error {
	if len(p.SchemaAdds) == 0 {
		return nil
	}
	if err := w.step("schema"); err != nil {
		return err
	}
	schemaEvolution.Lock()
	defer schemaEvolution.Unlock()
	defer w.Store.Schema.Invalidate()
	coll := w.Store.SchemaCollection()
	pending := p.SchemaAdds
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == schemaAddAttempts {
			e := pending[0]
			return ParseErr(ParseIncorrectType, "schema mismatch for %s.%s: another writer is changing the class's schema; try again", p.ClassName, e.Key)
		}
		for _, e := range pending {
			if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ClassName}, {Key: e.Key, Value: bson.D{{Key: "$exists", Value: false}}}},
				bson.D{{Key: "$set", Value: bson.D{e}}}); err != nil {
				return err
			}
		}
		var doc bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: p.ClassName}}).Decode(&doc); err != nil {
			return err
		}
		var missing bson.D
		for _, e := range pending {
			got, present := doc[e.Key].(string)
			if !present {
				missing = append(missing, e)
				continue
			}
			if got != e.Value.(string) {
				have := FieldFromSchemaType(got)
				want := FieldFromSchemaType(e.Value.(string))
				return ParseErr(ParseIncorrectType, "schema mismatch for %s.%s; expected %s but got %s", p.ClassName, e.Key, fieldType(have), fieldType(want))
			}
		}
		pending = missing
	}
	for _, e := range p.SchemaAdds {
		if e.Value == "polygon" {
			// Parse's createIndexesIfNeeded: a new Polygon field gets a
			// 2dsphere index. A server without it (FerretDB) still stores
			// the field; $geoIntersects then needs the index.
			_, _ = w.Store.Collection(p.ClassName).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: e.Key, Value: "2dsphere"}}})
		}
	}
	return nil
}

// applyJoins adds and removes relation pairs: {owningId, relatedId} with a
// server ObjectId, upserted as Parse does so a pair is never doubled.
func (w *DirectWriter) applyJoins(ctx context.Context, p *WritePlan) error {
	if len(p.Joins) == 0 {
		return nil
	}
	if err := w.step("joins"); err != nil {
		return err
	}
	for _, j := range p.Joins {
		owner := j.ownerID
		if owner == "" {
			owner = p.ObjectID
		}
		coll := w.Store.JoinCollection(j.Field, p.ClassName)
		for _, id := range j.Add {
			pair := bson.D{{Key: "relatedId", Value: id}, {Key: "owningId", Value: owner}}
			if _, err := coll.UpdateOne(ctx, pair, bson.D{{Key: "$set", Value: pair}}, options.UpdateOne().SetUpsert(true)); err != nil {
				return err
			}
		}
		if len(j.Remove) > 0 {
			ids := bson.A{}
			for _, id := range j.Remove {
				ids = append(ids, id)
			}
			if _, err := coll.DeleteMany(ctx, bson.D{{Key: "owningId", Value: owner}, {Key: "relatedId", Value: bson.D{{Key: "$in", Value: ids}}}}); err != nil {
				return err
			}
		}
	}
	return nil
}
