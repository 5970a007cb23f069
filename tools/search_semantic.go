package tools

// semantic_search: find_similar's nearest rows across the searchable
// classes, their text fields cut into chunks, the chunks re-scored against
// the query and packed into a token budget.

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/embed"
	"github.com/parse-mcp/parse-mcp/internal/parsedb"
	"github.com/parse-mcp/parse-mcp/internal/toolerror"
	"github.com/parse-mcp/parse-mcp/policy"
)

// chunk is one piece of a row's text.
type chunk struct {
	Class  string  `json:"class_name"`
	ID     string  `json:"object_id"`
	Field  string  `json:"field"`
	Text   string  `json:"text"`
	Score  float64 `json:"score"`
	tokens int
}

// semantic_search's arguments; class_name is optional (every searchable
// class when absent).
type semanticSearchIn struct {
	Query     searchQuery    `json:"query" arg:"required"`
	ClassName string         `json:"class_name" arg:"class,optional"`
	K         int            `json:"k" arg:"default=5,max=20;min=1"`
	Where     map[string]any `json:"where"`
	Budget    int            `json:"token_budget" arg:"default=20000;min=100,max=200000"`
}

// semanticOut's members are in the order the result has always had.
type semanticOut struct {
	BudgetTruncated bool     `json:"budget_truncated"`
	Chunks          []chunk  `json:"chunks"`
	Classes         []string `json:"classes"`
	Embedder        string   `json:"embedder"`
	Query           string   `json:"query"`
	TokensEstimated int      `json:"tokens_estimated"`
}

func semanticSearch(ctx context.Context, d *Deps, in semanticSearchIn) (*semanticOut, error) {
	query, k, budget, where := string(in.Query), in.K, in.Budget, in.Where
	if d.Embedder == nil {
		return nil, toolerror.New(toolerror.InvalidArgument, "semantic_search needs an embedder: the operator sets PARSE_MCP_EMBEDDINGS_URL (an OpenAI-compatible /v1/embeddings endpoint) and PARSE_MCP_EMBEDDINGS_MODEL. Use atlas_text_search meanwhile")
	}
	schema, err := d.Store.Schema.Get(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	explicit := in.ClassName != ""
	if explicit {
		names = []string{in.ClassName}
	} else {
		if len(where) > 0 {
			return nil, invalid("where needs class_name (its fields belong to one class)")
		}
		names = d.Policy.SearchClasses()
	}
	qv, err := embedTexts(ctx, d, []string{query})
	if err != nil {
		return nil, err
	}
	var chunks []chunk
	searched := []string{}
	for _, n := range names {
		cls, cc, err := classChunks(ctx, d, schema, n, explicit, where, qv[0], k)
		if err != nil {
			return nil, err
		}
		if cls != "" {
			searched = append(searched, cls)
			chunks = append(chunks, cc...)
		}
	}
	if len(chunks) > semanticChunkCap {
		sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].Score > chunks[j].Score })
		chunks = chunks[:semanticChunkCap]
	}
	if len(chunks) > 0 {
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Text
		}
		vecs, err := embedTexts(ctx, d, texts)
		if err != nil {
			return nil, err
		}
		for i := range chunks {
			if len(vecs[i]) == len(qv[0]) {
				chunks[i].Score = embed.Cosine(qv[0], vecs[i])
			}
		}
	}
	sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].Score > chunks[j].Score })
	out := []chunk{}
	used, truncated := 0, false
	for _, c := range chunks {
		c.tokens = len(c.Text)/4 + 1
		if used+c.tokens > budget {
			truncated = true
			continue
		}
		used += c.tokens
		c.Score = roundScore(d, c.Score)
		out = append(out, c)
	}
	return &semanticOut{Query: query, Classes: searched, Embedder: d.Embedder.Name(), Chunks: out, BudgetTruncated: truncated, TokensEstimated: used}, nil
}

// classChunks are the chunks of the text fields of class n's k rows
// nearest to the query vector qv, and the class's name ("" when the class
// is skipped).
func classChunks(ctx context.Context, d *Deps, schema *parsedb.Schema, n string, explicit bool, where map[string]any, qv []float64, k int) (string, []chunk, error) {
	// Every class passes the class gate; in the default set a class
	// the session cannot use, or without readable vectors, is skipped
	// silently (hidden ≡ missing).
	cls, err := d.Policy.ResolveClass(ctx, schema, n)
	if err != nil {
		if explicit {
			return "", nil, err
		}
		return "", nil, nil
	}
	sp := d.Policy.Search(cls.Name)
	if sp == nil && explicit {
		_, _, _, err := searchClass(ctx, d, n)
		return "", nil, err
	}
	textFields := readableOf(d, cls, spTextFields(sp))
	if verr := vectorReadable(d, cls, sp); verr != nil || len(textFields) == 0 {
		if explicit {
			if verr == nil {
				verr = toolerror.New(toolerror.InvalidArgument, "%s has no text_fields this session may read", cls.Name)
			}
			return "", nil, verr
		}
		return "", nil, nil
	}
	hits, _, err := nearest(ctx, d, schema, cls, sp, where, qv, "", k)
	if err != nil {
		if explicit || toolerror.KindOf(err) == toolerror.Infrastructure {
			return "", nil, err
		}
		return "", nil, nil
	}
	_, rows, kept, err := hitRows(ctx, d, schema, cls, where, hits, planInput{keys: textFields, shape: shapeObjects})
	if err != nil {
		return "", nil, err
	}
	var chunks []chunk
	for i, r := range rows {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			return "", nil, err
		}
		for _, f := range textFields {
			text, _ := m[f].(string)
			for _, c := range ChunkText(text, chunkChars, chunkOverlap) {
				chunks = append(chunks, chunk{Class: cls.Name, ID: kept[i].id, Field: f, Text: c, Score: kept[i].score})
			}
		}
	}
	return cls.Name, chunks, nil
}

func spTextFields(sp *policy.SearchPolicy) []string {
	if sp == nil {
		return nil
	}
	return sp.TextFields
}

// embedTexts runs the embedder, turning its failures into errors the model
// can act on (the endpoint's own words stay in the operator log).
func embedTexts(ctx context.Context, d *Deps, texts []string) ([][]float64, error) {
	vecs, err := d.Embedder.Embed(ctx, texts)
	switch {
	case err == nil:
		return vecs, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err == embed.ErrBudget:
		return nil, &toolerror.Error{Code: toolerror.RateLimited, RetryAfter: time.Minute, Message: "the embeddings call budget of this window is spent; try again in a minute"}
	}
	return nil, toolerror.New(toolerror.InvalidQuery, "the embeddings endpoint failed; the operator log has the reason").WithCause(err)
}

// ChunkText splits text into pieces of about size characters with overlap,
// ending each piece at a sentence boundary (". ", "! ", "? ", newline) in
// its last quarter when there is one, else at a space.
func ChunkText(text string, size, overlap int) []string {
	r := []rune(strings.TrimSpace(text))
	if len(r) == 0 {
		return nil
	}
	var out []string
	for start := 0; start < len(r); {
		end := min(start+size, len(r))
		if end < len(r) {
			cut := -1
			for i := end - 1; i > start+size*3/4; i-- {
				if r[i] == '\n' || (r[i] == ' ' && i > 0 && strings.ContainsRune(".!?", r[i-1])) {
					cut = i + 1
					break
				}
			}
			if cut < 0 {
				for i := end - 1; i > start+size/2; i-- {
					if r[i] == ' ' {
						cut = i + 1
						break
					}
				}
			}
			if cut > 0 {
				end = cut
			}
		}
		if piece := strings.TrimSpace(string(r[start:end])); piece != "" {
			out = append(out, piece)
		}
		if end >= len(r) {
			break
		}
		next := max(end-overlap, start+1)
		// Start the overlap at a word.
		for next < end && r[next-1] != ' ' && r[next-1] != '\n' {
			next++
		}
		start = next
	}
	return out
}
