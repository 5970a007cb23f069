package parseserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/parse-mcp/parse-mcp/internal/parsedb"
)

// Writer is the bridge's write path (tools.WriteBackend): every write the
// policy let through is sent to Parse Server's REST API as the configured
// identity, so Parse runs its triggers and validation and enforces ACL/CLP
// itself. The stored object is then read back from MongoDB, showing what
// beforeSave made of it.
type Writer struct {
	Client *Client
	Store  *parsedb.Store
}

// Kind names the write path.
func (w *Writer) Kind() string { return "parse_server" }

// Plan builds the REST request, touching nothing.
func (w *Writer) Plan(ctx context.Context, req *parsedb.WriteRequest) (*parsedb.WritePlan, error) {
	id, err := w.Client.IdentityFor(ctx)
	if err != nil {
		return nil, err
	}
	// What Parse would fail on with an internal error is answered here as
	// the direct path answers it (an unknown __op: 107; a dotted operation
	// on a stored value of another type: 111; a nested "$" or "." key:
	// 121), before anything is sent, dry run or not.
	if err := parsedb.CheckOperations(req); err != nil {
		return nil, err
	}
	var r Request
	switch req.Op {
	case parsedb.WriteCreateObject:
		r = CreateObject(req.ClassName, restBody(req))
	case parsedb.WriteUpdateObject:
		r = UpdateObject(req.ClassName, req.ObjectID, restBody(req))
	case parsedb.WriteDeleteObject:
		r = DeleteObject(req.ClassName, req.ObjectID)
	case parsedb.WriteCreateClass:
		if req.Class != nil {
			return nil, parsedb.ParseErr(parsedb.ParseInvalidClassName, "Class %s already exists.", req.ClassName)
		}
		r = CreateClass(req.ClassName, req.Fields, req.CLP)
	case parsedb.WriteDeleteClass:
		r = DeleteClass(req.ClassName)
	default:
		return nil, fmt.Errorf("parse server writer: unknown operation %q", req.Op)
	}
	names := make([]string, 0, len(req.Fields))
	for k := range req.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return &parsedb.WritePlan{
		Op: req.Op, ClassName: req.ClassName, ObjectID: req.ObjectID, Fields: names,
		REST: &parsedb.RESTWrite{Method: r.Method, Path: r.Path, Body: r.Body, Preview: w.Client.Preview(r, id)},
	}, nil
}

// Apply sends the request and returns the object as stored afterwards (nil
// for deletes and class operations).
func (w *Writer) Apply(ctx context.Context, p *parsedb.WritePlan) (bson.Raw, error) {
	if p.REST == nil {
		return nil, errors.New("parse server writer: plan without a REST request")
	}
	id, err := w.Client.IdentityFor(ctx)
	if err != nil {
		return nil, err
	}
	out, err := w.Client.Do(ctx, Request{Method: p.REST.Method, Path: p.REST.Path, Body: p.REST.Body}, id)
	if err != nil {
		return nil, ToolError(string(p.Op), err)
	}
	switch p.Op {
	case parsedb.WriteCreateClass, parsedb.WriteDeleteClass:
		// Parse changed _SCHEMA: read it again now, not at the next refresh.
		w.Store.Schema.Invalidate()
		return nil, nil
	case parsedb.WriteDeleteObject:
		return nil, nil
	case parsedb.WriteCreateObject:
		oid, _ := out["objectId"].(string)
		if oid == "" {
			return nil, errors.New("parse server writer: create answered without an objectId")
		}
		p.ObjectID = oid
	}
	// Parse may have added fields to _SCHEMA (and its own cache): read it
	// again so the result, and the next write, type them.
	w.Store.Schema.Invalidate()
	var stored bson.Raw
	err = w.Store.Collection(p.ClassName).FindOne(ctx, bson.D{{Key: "_id", Value: p.ObjectID}}).Decode(&stored)
	if errors.Is(err, mongo.ErrNoDocuments) {
		// Written by Parse but not in the database this server reads: the
		// two are configured for different apps.
		return nil, fmt.Errorf("the object %s %s that Parse Server wrote is not in the configured database: PARSE_MCP_MONGODB_URI and PARSE_MCP_SERVER_URL must be the same app", p.ClassName, p.ObjectID)
	}
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// restBody is the REST body of an object write: the fields as given (REST
// values and __op operations), pointer fields given as a bare objectId and
// date fields given as an ISO string in Parse's typed form, and the ACL.
func restBody(req *parsedb.WriteRequest) map[string]any {
	body := make(map[string]any, len(req.Fields)+1)
	for k, v := range req.Fields {
		// Objects keep the client's key order: Parse stores them as sent.
		body[k] = parsedb.OrderedREST(k, restValue(req.Class, k, v), req.KeyOrder)
	}
	if req.ACL != nil {
		body["ACL"] = req.ACL
	}
	return body
}

func restValue(cls *parsedb.Class, key string, v any) any {
	s, ok := v.(string)
	if !ok || cls == nil {
		return v
	}
	f := cls.Fields[key]
	if f == nil {
		return v
	}
	switch f.Type {
	case "Pointer":
		if !strings.Contains(s, "$") {
			return map[string]any{"__type": "Pointer", "className": f.TargetClass, "objectId": s}
		}
	case "Date":
		return map[string]any{"__type": "Date", "iso": s}
	}
	return v
}

// CallFunction runs a Cloud Code function (POST /functions/:name) as the
// configured identity and returns its result (tools.CloudFunctionCaller).
// The result is the app's data, returned to the model as untrusted output.
func (c *Client) CallFunction(ctx context.Context, name string, params map[string]any) (any, error) {
	id, err := c.IdentityFor(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.Do(ctx, CallFunction(name, params), id)
	if err != nil {
		return nil, ToolError("the Cloud function "+name, err)
	}
	return out["result"], nil
}
