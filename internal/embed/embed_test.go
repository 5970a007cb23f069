package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testKey = "sk-test-SECRET-never-shown"

// openAIServer speaks the OpenAI embeddings wire format: {model, input[]} →
// {data:[{index, embedding}]}. fail decides, per request number (from 1),
// whether to answer with a status instead.
func openAIServer(t *testing.T, dims int, fail func(n int, w http.ResponseWriter) bool) (*httptest.Server, *atomic.Int32, *[]int) {
	t.Helper()
	var n atomic.Int32
	var sizes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := int(n.Add(1))
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
			return
		}
		if fail != nil && fail(k, w) {
			return
		}
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		sizes = append(sizes, len(req.Input))
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		// Answer in reverse order: the client must place by index.
		for i := range slices.Backward(req.Input) {
			v := make([]float64, dims)
			v[0] = float64(len(req.Input[i]))
			data = append(data, item{"embedding", i, v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &sizes
}

func newTestClient(t *testing.T, url string, mod func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{URL: url, Model: "m1", APIKey: testKey, Dimensions: 4, BatchSize: 2, RetryBase: time.Millisecond, Timeout: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientBatchesAndOrders(t *testing.T) {
	srv, calls, sizes := openAIServer(t, 4, nil)
	c := newTestClient(t, srv.URL, nil)
	vecs, err := c.Embed(context.Background(), []string{"a", "bb", "ccc", "dddd", "eeeee"})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || fmt.Sprint(*sizes) != "[2 2 1]" {
		t.Fatalf("calls %d, batch sizes %v; want 3 calls of [2 2 1]", calls.Load(), *sizes)
	}
	for i, v := range vecs {
		if v[0] != float64(i+1) {
			t.Fatalf("vector %d is %v: answers not placed by index", i, v)
		}
	}
}

func TestClientRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{{"429", http.StatusTooManyRequests}, {"500", http.StatusInternalServerError}, {"503", http.StatusServiceUnavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls, _ := openAIServer(t, 4, func(n int, w http.ResponseWriter) bool {
				if n <= 2 {
					w.Header().Set("Retry-After", "0")
					http.Error(w, "try later", tc.status)
					return true
				}
				return false
			})
			c := newTestClient(t, srv.URL, nil)
			if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
				t.Fatalf("after two %d answers: %v", tc.status, err)
			}
			if calls.Load() != 3 {
				t.Fatalf("%d calls, want 3 (two retries)", calls.Load())
			}
		})
	}
	t.Run("gives up", func(t *testing.T) {
		srv, calls, _ := openAIServer(t, 4, func(n int, w http.ResponseWriter) bool {
			http.Error(w, "down", http.StatusBadGateway)
			return true
		})
		c := newTestClient(t, srv.URL, func(c *ClientConfig) { c.Retries = 2 })
		_, err := c.Embed(context.Background(), []string{"x"})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusBadGateway {
			t.Fatalf("err %v, want a StatusError 502", err)
		}
		if calls.Load() != 3 {
			t.Fatalf("%d calls, want 3 (1 + 2 retries)", calls.Load())
		}
	})
	t.Run("400 not retried", func(t *testing.T) {
		srv, calls, _ := openAIServer(t, 4, func(n int, w http.ResponseWriter) bool {
			http.Error(w, "bad input", http.StatusBadRequest)
			return true
		})
		c := newTestClient(t, srv.URL, nil)
		if _, err := c.Embed(context.Background(), []string{"x"}); err == nil || calls.Load() != 1 {
			t.Fatalf("err %v after %d calls; want an error after 1 call", err, calls.Load())
		}
	})
}

func TestClientSlowServer(t *testing.T) {
	release := make(chan struct{})
	srv, _, _ := openAIServer(t, 4, func(n int, w http.ResponseWriter) bool {
		<-release
		return false
	})
	defer close(release)
	c := newTestClient(t, srv.URL, func(c *ClientConfig) { c.Timeout = 50 * time.Millisecond; c.Retries = 1 })
	_, err := c.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err %v, want a timeout", err)
	}
	// Cancellation by the caller stops at once, without retrying.
	ctx, cancel := context.WithCancel(context.Background())
	c2 := newTestClient(t, srv.URL, func(c *ClientConfig) { c.Timeout = time.Hour })
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := c2.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestClientWrongDimensions(t *testing.T) {
	srv, _, _ := openAIServer(t, 3, nil)
	c := newTestClient(t, srv.URL, nil)
	_, err := c.Embed(context.Background(), []string{"x"})
	var de *DimensionError
	if !errors.As(err, &de) || de.Got != 3 || de.Want != 4 {
		t.Fatalf("err %v, want a DimensionError 3 vs 4", err)
	}
}

func TestClientKeyNeverInErrors(t *testing.T) {
	srv, _, _ := openAIServer(t, 4, func(n int, w http.ResponseWriter) bool {
		http.Error(w, "nope", http.StatusForbidden)
		return true
	})
	for _, url := range []string{srv.URL, "http://127.0.0.1:1"} {
		c := newTestClient(t, url, func(c *ClientConfig) { c.Retries = -1 })
		_, err := c.Embed(context.Background(), []string{"x"})
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Fatalf("err %v: want an error without the key", err)
		}
	}
}

func TestClientBudget(t *testing.T) {
	srv, calls, _ := openAIServer(t, 4, nil)
	c := newTestClient(t, srv.URL, func(c *ClientConfig) { c.Budget = 2; c.Window = time.Hour })
	for range 2 {
		if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrBudget) {
		t.Fatalf("third call: %v, want ErrBudget", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d requests sent, want 2", calls.Load())
	}
	b := &budget{max: 1, window: time.Minute}
	t0 := time.Now()
	if !b.take(t0) || b.take(t0.Add(59*time.Second)) || !b.take(t0.Add(61*time.Second)) {
		t.Fatal("sliding window does not free a slot after the window")
	}
}

func TestFixtureDeterministic(t *testing.T) {
	a := FixtureVector("The sea, the sea! Waves and salt.")
	b := FixtureVector("the SEA the sea waves and salt")
	if Cosine(a, b) < 0.999 {
		t.Fatalf("same words, cosine %v", Cosine(a, b))
	}
	c := FixtureVector("desert sand under a burning sun")
	if Cosine(a, c) >= Cosine(a, FixtureVector("sea waves")) {
		t.Fatal("shared words do not bring texts closer")
	}
	if len(a) != FixtureDimensions {
		t.Fatalf("len %d", len(a))
	}
}

// TestClientEchoedKeyMasked: an endpoint that echoes the request's key in
// its error body (anywhere, even where the 200-byte snippet cuts) does not
// put it, or a piece of it, in the error.
func TestClientEchoedKeyMasked(t *testing.T) {
	for _, pad := range []int{0, 180} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, strings.Repeat("-", pad)+"invalid key "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), http.StatusUnauthorized)
		}))
		c := newTestClient(t, srv.URL, func(c *ClientConfig) { c.Retries = -1 })
		_, err := c.Embed(context.Background(), []string{"x"})
		srv.Close()
		if err == nil || strings.Contains(err.Error(), testKey[:6]) {
			t.Fatalf("pad %d: err %v: want an error without the key", pad, err)
		}
	}
}
