package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parse-mcp/parse-mcp/internal/config"
	"github.com/parse-mcp/parse-mcp/internal/scrub"
)

// Provider kinds (LLM_PROVIDER).
const (
	KindOpenAI           = "openai"
	KindAnthropic        = "anthropic"
	KindOpenAICompatible = "openai-compatible"
)

// Default models per provider (LLM_MODEL): the current Sonnet-class model
// and a current small OpenAI model, as the official SDKs name them (docs/chat.md
// "Chat from a terminal"). An OpenAI-compatible server's default is the first
// model it lists at GET /models.
const (
	DefaultOpenAIModel    = "gpt-5.4-mini"
	DefaultAnthropicModel = "claude-sonnet-5-5"
)

// localServers are the LLM_PROVIDER shorthands for OpenAI-compatible local
// servers, with their default base URLs.
var localServers = map[string]string{
	"lmstudio": "http://localhost:1234/v1",
	"ollama":   "http://localhost:11434/v1",
	"vllm":     "http://localhost:8000/v1",
}

// Config is the provider configuration (the LLM_* variables).
type Config struct {
	Kind    string
	APIKey  string // secret: never printed or logged
	Model   string
	BaseURL string
	// Timeout bounds the wait for the first byte of a response and every gap
	// between stream chunks (LLM_TIMEOUT; default 120s: a local server may
	// load the model first).
	Timeout time.Duration
	// Retries is how many times a 429, 5xx or failed connection is retried
	// (default 3); RetryBase is the first backoff (default 1s), doubled each
	// time; a Retry-After over MaxRetryWait (default 60s) is not waited for.
	Retries      int
	RetryBase    time.Duration
	MaxRetryWait time.Duration
	// OnRetry, when set, is told before each retry.
	OnRetry func(attempt int, wait time.Duration, reason string)
	// HTTPClient replaces the default client (tests).
	HTTPClient *http.Client
}

// ConfigError names the variable at fault and the fix.
type ConfigError struct{ Var, Problem, Fix string }

func (e *ConfigError) Error() string { return fmt.Sprintf("%s: %s (%s)", e.Var, e.Problem, e.Fix) }

// ConfigFromEnv reads LLM_PROVIDER, LLM_API_KEY, LLM_MODEL, LLM_BASE_URL and
// LLM_TIMEOUT.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Kind:    strings.ToLower(strings.TrimSpace(getenv("LLM_PROVIDER"))),
		APIKey:  strings.TrimSpace(getenv("LLM_API_KEY")),
		Model:   strings.TrimSpace(getenv("LLM_MODEL")),
		BaseURL: strings.TrimRight(strings.TrimSpace(getenv("LLM_BASE_URL")), "/"),
	}
	if t := strings.TrimSpace(getenv("LLM_TIMEOUT")); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil {
			if n, err2 := strconv.Atoi(t); err2 == nil {
				d, err = time.Duration(n)*time.Second, nil
			}
		}
		if err != nil || d < time.Second || d > time.Hour {
			return c, &ConfigError{"LLM_TIMEOUT", fmt.Sprintf("%q is not a duration from 1s to 1h", t), "e.g. 120s or 5m"}
		}
		c.Timeout = d
	}
	switch c.Kind {
	case "":
		if c.BaseURL == "" {
			return c, &ConfigError{"LLM_PROVIDER", "not set", "use openai, anthropic or openai-compatible (with LLM_BASE_URL), or lmstudio, ollama, vllm"}
		}
		c.Kind = KindOpenAICompatible
	case KindOpenAI, KindAnthropic, KindOpenAICompatible:
	case "local", "openai_compatible":
		c.Kind = KindOpenAICompatible
	default:
		base, ok := localServers[c.Kind]
		if !ok {
			return c, &ConfigError{"LLM_PROVIDER", fmt.Sprintf("unknown provider %q", c.Kind), "use openai, anthropic or openai-compatible, or lmstudio, ollama, vllm"}
		}
		c.Kind = KindOpenAICompatible
		if c.BaseURL == "" {
			c.BaseURL = base
		}
	}
	switch c.Kind {
	case KindOpenAI:
		if c.APIKey == "" {
			return c, &ConfigError{"LLM_API_KEY", "not set", "the OpenAI API key; for a local server use LLM_PROVIDER=openai-compatible"}
		}
		if c.BaseURL == "" {
			c.BaseURL = "https://api.openai.com/v1"
		}
		if c.Model == "" {
			c.Model = DefaultOpenAIModel
		}
	case KindAnthropic:
		if c.APIKey == "" {
			return c, &ConfigError{"LLM_API_KEY", "not set", "the Anthropic API key"}
		}
		if c.BaseURL == "" {
			c.BaseURL = "https://api.anthropic.com"
		}
		if c.Model == "" {
			c.Model = DefaultAnthropicModel
		}
	case KindOpenAICompatible:
		if c.BaseURL == "" {
			return c, &ConfigError{"LLM_BASE_URL", "not set", "the server's OpenAI API root, e.g. http://localhost:1234/v1 (LM Studio), http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM)"}
		}
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		// Not quoted: a mistyped URL may still hold a password or a key.
		return c, &ConfigError{"LLM_BASE_URL", "is not an http(s) URL", "e.g. http://localhost:1234/v1"}
	}
	return c, nil
}

// New makes the provider a Config names.
func New(c Config) (Provider, error) {
	h := newHTTP(c)
	switch c.Kind {
	case KindOpenAI, KindOpenAICompatible:
		return &openAI{kind: c.Kind, model: c.Model, base: c.BaseURL, http: h}, nil
	case KindAnthropic:
		return &anthropic{model: c.Model, base: c.BaseURL, http: h}, nil
	}
	return nil, &ConfigError{"LLM_PROVIDER", fmt.Sprintf("unknown provider %q", c.Kind), "use openai, anthropic or openai-compatible"}
}

// APIError is a provider's refusal: its HTTP status and message (with
// anything looking like a key scrubbed).
type APIError struct {
	Provider   string
	Status     int
	Message    string
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	hint := ""
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (check LLM_API_KEY)"
	case http.StatusNotFound:
		hint = " (check LLM_MODEL and LLM_BASE_URL)"
	case http.StatusTooManyRequests:
		hint = " (rate limited"
		if e.RetryAfter > 0 {
			hint += "; retry after " + e.RetryAfter.Round(time.Second).String()
		}
		hint += ")"
	}
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s", e.Provider, e.Message)
	}
	return fmt.Sprintf("%s: HTTP %d: %s%s", e.Provider, e.Status, e.Message, hint)
}

// httpClient posts to a provider with timeouts and retries.
type httpClient struct {
	provider     string
	client       *http.Client
	key          string
	timeout      time.Duration
	retries      int
	retryBase    time.Duration
	maxRetryWait time.Duration
	onRetry      func(int, time.Duration, string)
}

func newHTTP(c Config) *httpClient {
	h := &httpClient{provider: c.Kind, client: c.HTTPClient, key: c.APIKey, timeout: c.Timeout, retries: c.Retries,
		retryBase: c.RetryBase, maxRetryWait: c.MaxRetryWait, onRetry: c.OnRetry}
	if h.timeout <= 0 {
		h.timeout = 120 * time.Second
	}
	if h.retries <= 0 {
		h.retries = 3
	}
	if h.retryBase <= 0 {
		h.retryBase = time.Second
	}
	if h.maxRetryWait <= 0 {
		h.maxRetryWait = 60 * time.Second
	}
	if h.client == nil {
		h.client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: h.timeout,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		}}
	}
	return h
}

// stream is an open response body whose reads fail once the server has sent
// nothing for the timeout.
type stream struct {
	body   io.ReadCloser
	timer  *time.Timer
	idle   time.Duration
	fired  atomic.Bool
	cancel context.CancelFunc
	ctype  string
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if s.fired.Load() {
		return n, fmt.Errorf("no data from the provider for %s (LLM_TIMEOUT)", s.idle)
	}
	s.timer.Reset(s.idle)
	return n, err
}

func (s *stream) Close() error {
	s.timer.Stop()
	err := s.body.Close()
	s.cancel()
	return err
}

// post sends body and returns the open 2xx response stream, retrying a
// 429, a 5xx and a failed connection with exponential backoff (honouring
// Retry-After) as long as nothing was received.
func (h *httpClient) post(ctx context.Context, url string, header http.Header, body []byte) (*stream, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithCancel(ctx)
		req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header = header.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.client.Do(req)
		var apiErr *APIError
		switch {
		case err != nil:
			cancel()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			apiErr = &APIError{Provider: h.provider, Message: h.scrub(connError(err))}
		case resp.StatusCode/100 == 2:
			s := &stream{body: resp.Body, idle: h.timeout, cancel: cancel, ctype: resp.Header.Get("Content-Type")}
			s.timer = time.AfterFunc(h.timeout, func() { s.fired.Store(true); cancel() })
			return s, nil
		default:
			apiErr = h.readError(resp)
			cancel()
		}
		retryable := apiErr.Status == 0 || apiErr.Status == http.StatusTooManyRequests || apiErr.Status >= 500 || apiErr.Status == http.StatusRequestTimeout
		if !retryable || attempt >= h.retries {
			return nil, apiErr
		}
		wait := h.retryBase << attempt
		wait += time.Duration(rand.Int64N(int64(wait)/4 + 1)) // jitter
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > h.maxRetryWait {
				return nil, apiErr
			}
			wait = apiErr.RetryAfter
		}
		reason := fmt.Sprintf("HTTP %d", apiErr.Status)
		if apiErr.Status == 0 {
			reason = apiErr.Message
		}
		if h.onRetry != nil {
			h.onRetry(attempt+1, wait, reason)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// get fetches a small JSON document (an OpenAI-compatible server's /models).
func (h *httpClient) get(ctx context.Context, url string, header http.Header, v any) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return &APIError{Provider: h.provider, Message: h.scrub(connError(err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return h.readError(resp)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v)
}

// readError turns a non-2xx response into an APIError: the provider's own
// message (OpenAI and Anthropic both use {"error":{"message":…}}) and
// Retry-After.
func (h *httpClient) readError(resp *http.Response) *APIError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Provider: h.provider, Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header)}
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && len(body.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		var str string
		switch {
		case json.Unmarshal(body.Error, &obj) == nil && obj.Message != "":
			e.Message = obj.Message
		case json.Unmarshal(body.Error, &str) == nil:
			e.Message = str
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(b))
		if e.Message == "" || !isPrintable(e.Message) {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	// Scrubbed before it is cut: a key cut in two would not be recognised.
	e.Message = h.scrub(e.Message)
	if len(e.Message) > 300 {
		e.Message = e.Message[:300] + "…"
	}
	return e
}

func isPrintable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' })
}

// retryAfter reads Retry-After (seconds or an HTTP date) and the
// millisecond variant some providers send.
func retryAfter(h http.Header) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n > 0 {
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func connError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	return "cannot reach the provider: " + err.Error()
}

// keyShapes are the shapes of provider keys, scrubbed from any message
// shown (an OpenAI 401 echoes part of the key).
// Compiled on first use: the server never pays for it.
var keyShapes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}`)
})

// scrub removes the API key, and anything shaped like one, from text.
func (h *httpClient) scrub(s string) string {
	if h.key != "" {
		// As the process's scrubber matches it: escaped, or with
		// invisible characters inserted.
		s = strings.ReplaceAll(scrub.New([]string{h.key}).String(s), config.Masked, "[redacted]")
	}
	return keyShapes().ReplaceAllString(s, "[redacted]")
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  []byte
}

// maxSSELine caps one line of a stream (a whole tool call's arguments may
// arrive in one chunk).
const maxSSELine = 8 << 20

// maxStream caps a whole reply stream: a server streaming without end is cut
// off rather than filling memory.
const maxStream = 64 << 20

// readSSE calls fn for each event of a text/event-stream.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	lr := &io.LimitedReader{R: r, N: maxStream + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	dispatch := func() error {
		if !hasData && ev.Event == "" {
			return nil
		}
		ev.Data = data.Bytes()
		err := fn(ev)
		ev, hasData = sseEvent{}, false
		data.Reset()
		return err
	}
	for {
		line, err := readLine(br)
		if lr.N <= 0 {
			return errors.New("reply stream over 64 MiB")
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return dispatch()
			}
			return err
		}
		if len(line) == 0 {
			if err := dispatch(); err != nil {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue // comment / keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return line, nil
			}
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > maxSSELine {
			return nil, errors.New("stream line over 8 MiB")
		}
		if !isPrefix {
			return line, nil
		}
	}
}

// objectArgs returns a tool call's arguments as a JSON object text: "" is
// {} (a call without arguments); anything else is kept as sent (invalid
// JSON is answered as a tool error, so the model can fix it).
func objectArgs(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}
