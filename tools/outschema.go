package tools

// The members the tools' output schemas (JSON Schema of structuredContent)
// share; each tool's own output schema is defined next to its handler, in
// its family file. They describe every member a result can carry — rows, pagination, next_call,
// truncation, the text formats, the untrusted-data note the policy adds — so
// that a strict client can trust them; e2e/schema_test.go validates real
// results of every mode and format against them. They are terse on purpose:
// every byte is sent with tools/list.

const (
	osNote   = `"_note":{"type":"string"}`
	osClass  = `"class_name":{"type":"string"}`
	osLegend = `"date_fields":{"type":"array","items":{"type":"string"}},"pointer_classes":{"type":"object","additionalProperties":{"type":"string"}}`
	osNext   = `"next_call":{"type":"object","properties":{"tool":{"type":"string"},"arguments":{"type":"object"}},"required":["tool","arguments"]}`
	osTrunc  = `"truncated":{"type":"boolean"},"truncated_note":{"type":"string"},"truncated_include_fields":{"type":"object"},` +
		`"_truncated":{"type":"object","properties":{"reason":{"type":"string"},"kept_count":{"type":"integer"},"original_count":{"type":"integer"},"next_skip":{"type":"integer"},"dropped_fields":{"type":"array","items":{"type":"string"}},"hint":{"type":"string"}}}`
	osText = `"format":{"type":"string","enum":["json","csv","markdown","table"]},"headers":{"type":"array","items":{"type":"string"}},"row_count":{"type":"integer"},"output":{"type":"string"}`
	osRows = `{"type":"array","items":{"type":"object"}}`
	// osColumns: the columnar layout (shape "columns"), one value array per
	// row in the order of columns.
	osColumns = `"columns":{"type":"array"},"rows":{"type":"array"}`
)

// osDryRun are the members of a dry_run:true answer (distinct, group_by,
// group_by_date): the exact pipeline that would run instead of the result;
// orDryRun requires either the result member or the pipeline.
const osDryRun = `,"dry_run":{"type":"boolean"},"parameters":{"type":"object"},"pipeline":{"type":"array","items":{"type":"object"}},"hint":{"type":"string"}`

func orDryRun(result string) string {
	return `"anyOf":[{"required":["` + result + `"]},{"required":["pipeline"]}]`
}

// osWrite are the members every write result can carry: the dry run with
// the change it would send, the write path, or a declined confirmation
// (written:false). Each write tool adds only the members it can return, so
// that its schema says exactly what it answers.
const osWrite = osNote + `,` + osClass + `,"dry_run":{"type":"boolean"},"write_path":{"type":"string"},"change":{"type":"object"},"note":{"type":"string"},` +
	`"written":{"type":"boolean"},"confirmation":{"type":"string"}`

const (
	osObjectID = `,"object_id":{"type":"string"}`
	osObject   = `,"object":{"type":"object"}`
	// osSchemaReload: a direct write that changed _SCHEMA says how a
	// running Parse Server reloads it.
	osSchemaReload = `,"schema_reload":{"type":"string"}`
)

// writeOut is the result schema of a write tool: osWrite plus the tool's
// own members.
func writeOut(members string) string {
	return `{"type":"object","properties":{` + osWrite + members + `},"required":["class_name"]}`
}
