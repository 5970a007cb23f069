//lint:file-ignore SA1019 the server keeps logging (notifications/message) for clients of the protocol before 2026-07-28; this test drives it through the Go SDK's deprecated logging API on purpose.

package e2e

// The official Go SDK (github.com/modelcontextprotocol/go-sdk, test-only) as
// a real client of the binary, over stdio and streamable HTTP, in a session
// revision (2025-11-25) and in the stateless revision (2026-07-28, which the
// SDK negotiates through server/discover): list and call tools, progress,
// cancellation, prompts, resources, completion, subscriptions
// (resources/subscribe, or subscriptions/listen in 2026-07-28) and the log
// level.

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type sdkEvents struct {
	progress chan *sdk.ProgressNotificationParams
	logs     chan *sdk.LoggingMessageParams
	updates  chan string
}

func sdkConnect(t *testing.T, transport string, version string) (*sdk.ClientSession, *sdkEvents) {
	t.Helper()
	ev := &sdkEvents{progress: make(chan *sdk.ProgressNotificationParams, 1024), logs: make(chan *sdk.LoggingMessageParams, 64), updates: make(chan string, 64)}
	client := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-e2e", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			select {
			case ev.progress <- r.Params:
			default:
			}
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) { ev.logs <- r.Params },
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			ev.updates <- r.Params.URI
		},
	})
	var tr sdk.Transport
	extra := scratchEnv(t, "PARSE_MCP_PROGRESS_INTERVAL=100ms")
	switch transport {
	case "stdio":
		cmd := exec.Command(binary)
		cmd.Env = env(extra...)
		cmd.Stderr = &testWriter{t: t}
		tr = &sdk.CommandTransport{Command: cmd}
	case "http":
		h := startHTTP(t, extra...)
		tr = &sdk.StreamableClientTransport{Endpoint: h.base + "/mcp", MaxRetries: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over %s at %s: %v", transport, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %q, want %q", got, version)
	}
	return cs, ev
}

func TestGoSDKClient(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range []string{"2025-11-25", statelessVersion} {
			t.Run(transport+"/"+version, func(t *testing.T) { sdkScenario(t, transport, version) })
		}
	}
}

func sdkScenario(t *testing.T, transport, version string) {
	cs, ev := sdkConnect(t, transport, version)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Tools.
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = true
	}
	if !names["count_objects"] || !names["query_class"] {
		t.Fatalf("tools/list: %v", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Song"}})
	if err != nil || res.IsError {
		t.Fatalf("count_objects: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"count"`) {
		t.Fatalf("count_objects structuredContent %s", b)
	}

	// Log level: a refused security violation reaches the client's log.
	// In 2026-07-28 the level travels in each request's _meta, which the SDK
	// (v1.8.0) never sends (its SetLoggingLevel is the deprecated session
	// RPC): that era's log level is covered by TestStatelessStdio/HTTP and
	// TestViolationLogged with raw requests.
	if version != statelessVersion {
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "warning"}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
		_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Song", "where": map[string]any{"$where": "1"}}})
		if err == nil || !strings.Contains(err.Error(), "-32602") && !strings.Contains(err.Error(), "nvalid") {
			t.Fatalf("a $where: want -32602, got %v", err)
		}
		select {
		case l := <-ev.logs:
			if l.Level != "warning" {
				t.Fatalf("log message %+v", l)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no notifications/message for a refused violation after setting the level")
		}
	}

	// Progress, then cancellation of the same slow call.
	callCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": slowClass, "where": map[string]any{"body": map[string]any{"$regex": slowRegex}}}}
		p.SetProgressToken("sdk-progress")
		_, err := cs.CallTool(callCtx, p)
		done <- err
	}()
	select {
	case p := <-ev.progress:
		if p.ProgressToken != "sdk-progress" || p.Progress <= 0 || !strings.Contains(p.Message, "running for") {
			t.Fatalf("progress %+v", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no progress from a slow call")
	}
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the cancelled call did not return")
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("after cancelling: %v", err)
	}

	// Prompts.
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) == 0 {
		t.Fatalf("prompts/list: %v %v", err, pl)
	}
	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "class_overview", Arguments: map[string]string{"class_name": "Song"}})
	if err != nil || len(gp.Messages) == 0 {
		t.Fatalf("prompts/get: %v %v", err, gp)
	}

	// Resources and completion.
	tm, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tm.ResourceTemplates) != 3 {
		t.Fatalf("resources/templates/list: %v %v", err, tm)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "parse://Song/schema"})
	if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, "title") {
		t.Fatalf("resources/read: %v %v", err, rr)
	}
	cr, err := cs.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/resource", URI: "parse://{className}/count"},
		Argument: sdk.CompleteParamsArgument{Name: "className", Value: "so"},
	})
	if err != nil || strings.Join(cr.Completion.Values, " ") != "Song" {
		t.Fatalf("completion/complete: %v %v", err, cr)
	}

	// Subscriptions: resources/subscribe in the session revision,
	// subscriptions/listen (opened by the SDK) in 2026-07-28.
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "parse://Song/count"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	// The SDK opens its listen stream on its own schedule, and an update
	// sent before it is open reaches nobody: write again until one arrives
	// (every write changes the count), within a generous ceiling.
	ceiling := time.After(60 * time.Second)
	for got := false; !got; {
		insertSong(t, false, nil)
		select {
		case uri := <-ev.updates:
			if uri != "parse://Song/count" {
				t.Fatalf("update for %s", uri)
			}
			got = true
		case <-time.After(5 * time.Second):
		case <-ceiling:
			t.Fatalf("no notifications/resources/updated within 60s of writes")
		}
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "parse://Song/count"}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}
