// Package embed turns text into vectors for the search tools (docs/search.md
// "Search and retrieval"): a client of any OpenAI-compatible /v1/embeddings
// endpoint (OpenAI, Ollama, LM Studio, vLLM, TEI) and Fixture, a
// deterministic hashing embedder for tests and the demo that is not
// semantic.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/parse-mcp/parse-mcp/internal/scrub"
	"github.com/parse-mcp/parse-mcp/internal/telemetry"
)

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
	// Name names the embedder for results and logs (never a secret).
	Name() string
}

// ErrBudget is returned when the per-window call budget is spent.
var ErrBudget = errors.New("embeddings call budget for this window is spent")

// FixtureName selects the Fixture embedder in PARSE_MCP_EMBEDDINGS_URL.
const FixtureName = "fixture"

// FixtureDimensions is the length of Fixture's vectors.
const FixtureDimensions = 64

// Fixture is a deterministic hashing embedder: every word (lower-cased,
// letters and digits) adds ±1 to one of FixtureDimensions buckets chosen by
// its FNV hash, and the sum is normalised. Texts sharing words are close;
// synonyms are not. It needs no network, so tests and the demo are
// reproducible offline; it is NOT semantic.
type Fixture struct{}

// Name implements Embedder.
func (Fixture) Name() string { return FixtureName }

// Embed implements Embedder.
func (Fixture) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = FixtureVector(t)
	}
	return out, nil
}

// FixtureVector is Fixture's vector of one text.
func FixtureVector(text string) []float64 {
	v := make([]float64, FixtureDimensions)
	for _, w := range Words(text) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(w))
		s := h.Sum64()
		sign := 1.0
		if s&1 == 1 {
			sign = -1
		}
		v[(s>>1)%FixtureDimensions] += sign
	}
	Normalize(v)
	return v
}

// Words splits text into lower-cased runs of letters and digits.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Normalize scales v to unit length in place (a zero vector stays zero).
func Normalize(v []float64) {
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n == 0 {
		return
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] /= n
	}
}

// Cosine is the cosine similarity of two vectors of the same length (0 when
// either is zero).
func Cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// ClientConfig configures an OpenAI-compatible embeddings client.
type ClientConfig struct {
	// URL is the endpoint: the full /v1/embeddings URL, or a base URL to
	// which /v1/embeddings (or /embeddings after a /v1) is appended.
	URL   string
	Model string
	// APIKey is sent as a bearer token; it never appears in errors or logs.
	APIKey string
	// Dimensions, when > 0, is the vector length every answer must have.
	Dimensions int
	// BatchSize is the most texts per request (default 64).
	BatchSize int
	// Timeout bounds one HTTP request (default 30s).
	Timeout time.Duration
	// Retries is how many times a 429, a 5xx or a network error is retried
	// (default 3; < 0: never), with exponential backoff from RetryBase (default 500ms),
	// or the server's Retry-After when it sends one (at most 30s).
	Retries   int
	RetryBase time.Duration
	// Budget is the most requests per Window (default 60 per minute; < 0:
	// unlimited).
	Budget int
	Window time.Duration
	// HTTP is the client to use (default: a new one).
	HTTP *http.Client
}

// Client is an OpenAI-compatible /v1/embeddings client.
type Client struct {
	cfg    ClientConfig
	url    string
	budget *budget
}

// NewClient validates cfg and returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Model == "" {
		return nil, errors.New("an embeddings model is required")
	}
	u := strings.TrimRight(cfg.URL, "/")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, fmt.Errorf("embeddings URL must be http:// or https://")
	}
	switch {
	case strings.HasSuffix(u, "/embeddings"):
	case strings.HasSuffix(u, "/v1"):
		u += "/embeddings"
	default:
		u += "/v1/embeddings"
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 500 * time.Millisecond
	}
	if cfg.Budget == 0 {
		cfg.Budget = 60
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Minute
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Transport: telemetry.Transport("embeddings", nil)}
	}
	c := &Client{cfg: cfg, url: u, budget: &budget{max: cfg.Budget, window: cfg.Window}}
	if cfg.Budget > 0 {
		telemetry.ObserveEmbeddingsBudget(func() int { return c.budget.remaining(time.Now()) })
	}
	return c, nil
}

// Name implements Embedder: the model name.
func (c *Client) Name() string { return c.cfg.Model }

// Embed implements Embedder, in batches of BatchSize texts per request.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.BatchSize {
		end := min(start+c.cfg.BatchSize, len(texts))
		vecs, err := c.batch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// StatusError is a non-retryable (or finally failed) HTTP answer. It holds
// the status and at most 200 bytes of the body, never the request.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("embeddings endpoint answered HTTP %d: %s", e.Status, e.Body)
}

// DimensionError is an answer whose vectors have the wrong length.
type DimensionError struct{ Got, Want int }

func (e *DimensionError) Error() string {
	return fmt.Sprintf("embeddings endpoint returned %d-dimensional vectors, expected %d (PARSE_MCP_EMBEDDINGS_DIMENSIONS or the stored vectors)", e.Got, e.Want)
}

type wireRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type wireResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

func (c *Client) batch(ctx context.Context, texts []string) ([][]float64, error) {
	body, err := json.Marshal(wireRequest{Model: c.cfg.Model, Input: texts})
	if err != nil {
		return nil, err
	}
	var last *retryAfter
	for attempt := 0; attempt <= max(c.cfg.Retries, 0); attempt++ {
		if attempt > 0 {
			wait := c.cfg.RetryBase << (attempt - 1)
			if last.after > 0 {
				wait = last.after
			}
			wait = min(wait, 30*time.Second)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		if !c.budget.take(time.Now()) {
			telemetry.EmbeddingsCall("budget_spent")
			return nil, ErrBudget
		}
		vecs, err := c.post(ctx, body, len(texts))
		if err == nil {
			telemetry.EmbeddingsCall("ok")
			return vecs, nil
		}
		telemetry.EmbeddingsCall("error")
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ra, ok := errors.AsType[*retryAfter](err)
		if !ok {
			return nil, err
		}
		last = ra
	}
	return nil, last.err
}

// retryAfter marks a retryable failure.
type retryAfter struct {
	err   error
	after time.Duration
}

func (r *retryAfter) Error() string { return r.err.Error() }
func (r *retryAfter) Unwrap() error { return r.err }

func (c *Client) post(ctx context.Context, body []byte, n int) ([][]float64, error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The URL is the operator's; the error never holds the key (it is
		// a header). Strip the *url.Error's method/URL prefix anyway.
		return nil, &retryAfter{err: fmt.Errorf("embeddings request failed: %s", networkReason(err))}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, &retryAfter{err: fmt.Errorf("embeddings response unreadable: %s", networkReason(err))}
	}
	if resp.StatusCode != http.StatusOK {
		// An endpoint may echo the request's key (escaped, or with
		// invisible characters inserted): it is masked before the body is
		// cut (a key cut in two would pass any scrubber).
		if c.cfg.APIKey != "" {
			raw = []byte(scrub.New([]string{c.cfg.APIKey}).String(string(raw)))
		}
		se := &StatusError{Status: resp.StatusCode, Body: snippet(raw)}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			var after time.Duration
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				after = time.Duration(s) * time.Second
			}
			return nil, &retryAfter{err: se, after: after}
		}
		return nil, se
	}
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		return nil, fmt.Errorf("embeddings response is not the OpenAI embeddings format: %v", err)
	}
	if len(wr.Data) != n {
		return nil, fmt.Errorf("embeddings response has %d vectors for %d inputs", len(wr.Data), n)
	}
	out := make([][]float64, n)
	for _, d := range wr.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("embeddings response has a bad index %d", d.Index)
		}
		if c.cfg.Dimensions > 0 && len(d.Embedding) != c.cfg.Dimensions {
			return nil, &DimensionError{Got: len(d.Embedding), Want: c.cfg.Dimensions}
		}
		out[d.Index] = d.Embedding
	}
	for i := 1; i < n; i++ {
		if len(out[i]) != len(out[0]) {
			return nil, &DimensionError{Got: len(out[i]), Want: len(out[0])}
		}
	}
	return out, nil
}

// networkReason is an HTTP client error without the request URL.
func networkReason(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// budget is a sliding-window call counter.
type budget struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	calls  []time.Time
}

func (b *budget) take(now time.Time) bool {
	if b.max < 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	if len(b.calls) >= b.max {
		return false
	}
	b.calls = append(b.calls, now)
	return true
}

// remaining is the calls the window still allows at now.
func (b *budget) remaining(now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	return b.max - len(b.calls)
}

// expire drops the calls that left the window; b.mu is held.
func (b *budget) expire(now time.Time) {
	cut := 0
	for cut < len(b.calls) && now.Sub(b.calls[cut]) >= b.window {
		cut++
	}
	b.calls = b.calls[cut:]
}
