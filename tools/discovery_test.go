package tools

import (
	"context"
	"testing"
)

// TestListToolsUnknownCategory: a category that does not exist is refused
// with the list of categories (an empty answer would read as "no such
// tools"); a known one in another case is a filter, as tools/list's is.
func TestListToolsUnknownCategory(t *testing.T) {
	_, err := listTools(context.Background(), &Deps{}, listToolsIn{Category: "writes"})
	want := `category must be one of aggregate, discovery, export, mutation, query, schema, search, got "writes"`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	out, err := listTools(context.Background(), &Deps{}, listToolsIn{Category: "QUERY"})
	if err != nil || len(out.Tools) != 0 {
		t.Fatalf("known category: %v %v", out, err)
	}
}
