package prompts

import (
	"context"
	"strings"
)

// searchPrompt shows the model how to use the search tools together; it is
// listed only when the policy makes a class searchable (as the tools are).
func searchPrompt() *Prompt {
	return &Prompt{
		Name:        "search_and_summarize",
		Title:       "Search and summarize",
		Description: "Answer a question from the app's text: find the relevant rows and passages with the search tools, then summarise them with their objectIds.",
		Args: []Arg{
			{Name: "question", Type: ArgString, Required: true, Description: "What to find out, e.g. songs about the sea"},
			{Name: "class_name", Type: ArgClass, Description: "Limit the search to one searchable class"},
		},
		Render: renderSearch,
	}
}

func renderSearch(_ context.Context, _ *Provider, v *Values) (string, error) {
	q := v.Get("question")
	args := map[string]any{"query": q}
	scope := "every searchable class"
	if cls := v.Class("class_name"); cls != nil {
		args["class_name"] = cls.Name
		scope = cls.Name
	}
	text := map[string]any{"class_name": "<class>", "query": "<key words>"}
	if c, ok := args["class_name"]; ok {
		text["class_name"] = c
	}
	return strings.Join([]string{
		"Answer this question from the data in " + scope + ": " + q,
		"",
		"1. get_schema on a class shows under search which of its fields you may search (text, autocomplete, facet fields; vector: true when find_similar and semantic_search work on it).",
		"2. Call " + call("semantic_search", args) + " for the passages closest to the question. It returns chunks (class_name, object_id, field, text, score) within a token budget; budget_truncated says more matched.",
		"3. For exact words or names call " + call("atlas_text_search", text) + "; to resolve a partial name use atlas_autocomplete; to see how the matches split (by genre, date…) use atlas_faceted_search with the same query; for more rows like a good hit use find_similar with its object_id.",
		"4. If semantic_search is refused for want of an embedder, rely on atlas_text_search.",
		"5. Summarise what the rows say, citing each fact as Class#objectId. Say which engine answered (engine in each result) and when results were truncated; scores rank results within one call and are not comparable across engines.",
		"",
		untrusted,
	}, "\n"), nil
}
