package tools

//go:generate go test -run TestToolsDocIsCurrent -update .

// Catalog is every tool parse-mcp offers; the policy decides per session
// which of them are listed and callable.
func Catalog() []*Tool {
	var all []*Tool
	for _, family := range [][]*Tool{
		DiscoveryTools(),
		SchemaTools(),
		QueryTools(),
		AggregateTools(),
		ExportTools(),
		WriteTools(),
		ActionTools(),
		SearchTools(),
	} {
		all = append(all, family...)
	}
	return all
}
