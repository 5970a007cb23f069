package e2e

// Prompts through the binary: prompts/list, every built-in prompt with good
// and bad arguments (-32602), prompts declared in the policy file, and
// start-up refusal of a malformed declared prompt.

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/parse-mcp/parse-mcp/internal/demo"
)

func promptText(t testing.TB, m map[string]any) string {
	t.Helper()
	msgs := result(t, m)["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages: %v", msgs)
	}
	msg := msgs[0].(map[string]any)
	if msg["role"] != "user" {
		t.Fatalf("role %v", msg["role"])
	}
	return msg["content"].(map[string]any)["text"].(string)
}

func getPrompt(r *rawServer, name string, args map[string]string) map[string]any {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return r.rpc("p", "prompts/get", string(b))
}

// artistWithSongs finds an Artist that some Song points to.
func artistWithSongs(t testing.TB) string {
	t.Helper()
	var doc bson.M
	err := testDB.Collection(scratchPrefix+demo.ClassSong).FindOne(context.Background(), bson.D{{Key: "_p_artist", Value: bson.D{{Key: "$exists", Value: true}}}}).Decode(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(doc["_p_artist"].(string), "Artist$")
}

func TestPrompts(t *testing.T) {
	env := scratchEnv(t)
	env = append(env, policyFile(t, "prompts_declared"))
	r := startRaw(t, env...)
	r.initialize()

	list := result(t, r.rpc("l", "prompts/list", ""))["prompts"].([]any)
	got := map[string]map[string]any{}
	for _, p := range list {
		pm := p.(map[string]any)
		got[pm["name"].(string)] = pm
		if pm["description"] == "" {
			t.Errorf("%s has no description", pm["name"])
		}
	}
	for _, want := range []string{"parse_conventions", "parse_relations", "explore_database", "class_overview", "count_by",
		"recent_activity", "find_relationship", "created_in_range", "overdue_invoices", "search_and_summarize"} {
		if got[want] == nil {
			t.Errorf("prompts/list lacks %s", want)
		}
	}
	if len(got) != 10 {
		t.Errorf("%d prompts, want 10", len(got))
	}
	required := func(name string) string {
		var out []string
		for _, a := range got[name]["arguments"].([]any) {
			am := a.(map[string]any)
			if am["required"] == true {
				out = append(out, am["name"].(string))
			}
		}
		return strings.Join(out, ",")
	}
	if required("find_relationship") != "parent_class,parent_id,child_class,pointer_field" || required("created_in_range") != "class_name,since" || required("recent_activity") != "class_name" {
		t.Errorf("required arguments: %s / %s / %s", required("find_relationship"), required("created_in_range"), required("recent_activity"))
	}

	artist := artistWithSongs(t)
	good := []struct {
		name     string
		args     map[string]string
		contains []string
	}{
		{"parse_conventions", nil, []string{"objectId", "$relatedTo", "not instructions"}},
		{"parse_relations", nil, []string{"Song.artist → Artist", "Album.artist → Artist"}},
		{"parse_relations", map[string]string{"classes": "Playlist"}, []string{"Playlist.songs ↔ Song", "Classes in focus: Playlist."}},
		{"explore_database", nil, []string{"get_all_schemas", "Song", "Artist"}},
		{"class_overview", map[string]string{"class_name": "Song"}, []string{`get_schema {"class_name":"Song"}`, "parse://Song/samples"}},
		{"count_by", map[string]string{"class_name": "Song", "group_by": "genre"}, []string{`group_by {"class_name":"Song","field":"genre","operation":"count"`}},
		{"count_by", map[string]string{"class_name": "Song", "group_by": "releasedAt"}, []string{"group_by_date"}},
		{"recent_activity", map[string]string{"class_name": "Song"}, []string{`"limit":10`, `"order":"-updatedAt"`}},
		{"recent_activity", map[string]string{"class_name": "Song", "limit": "0"}, []string{`"limit":10`}},
		{"recent_activity", map[string]string{"class_name": "Song", "limit": "-5"}, []string{`"limit":10`, "limit -5 is not a count: the default, 10, is used."}},
		{"recent_activity", map[string]string{"class_name": "Song", "limit": "500"}, []string{`"limit":100`, "limit 500 is more than this prompt shows: at most 100."}},
		{"recent_activity", map[string]string{"class_name": "Song", "limit": "25"}, []string{`"limit":25`}},
		{"find_relationship", map[string]string{"parent_class": "Artist", "parent_id": artist, "child_class": "Song", "pointer_field": "artist"},
			[]string{`get_object {"class_name":"Artist","object_id":"` + artist + `"}`, `"where":{"artist":"` + artist + `"}`}},
		{"created_in_range", map[string]string{"class_name": "Song", "since": "2020-01-01", "until": "2020-03-01T00:00:00Z"},
			[]string{`"iso":"2020-01-01T00:00:00Z"`, `"$lt":{"__type":"Date","iso":"2020-03-01T00:00:00Z"}`, `"interval":"day"`}},
		{"created_in_range", map[string]string{"class_name": "_User", "since": "2019-06-01T12:30:00+02:00"}, []string{`"iso":"2019-06-01T10:30:00Z"`, "until now"}},
		{"overdue_invoices", map[string]string{"user_id": demo.UserCarolID},
			[]string{"List the Invoice objects with status overdue whose user is " + demo.UserCarolID + ", due since 2020-01-01T00:00:00Z. Note: \n"}},
		{"overdue_invoices", map[string]string{"user_id": demo.UserCarolID, "klass": "Song", "note": "urgent", "unknown": "ignored"}, []string{"List the Song objects", "Note: urgent"}},
	}
	for _, c := range good {
		text := promptText(t, getPrompt(r, c.name, c.args))
		for _, s := range c.contains {
			if !strings.Contains(text, s) {
				t.Errorf("%s %v: text lacks %q:\n%s", c.name, c.args, s, text)
			}
		}
		if strings.Contains(text, demo.HiddenClassName) {
			t.Errorf("%s mentions the hidden class:\n%s", c.name, text)
		}
	}

	bad := []struct {
		name    string
		args    map[string]string
		mention string
	}{
		{"no_such_prompt", nil, "not found"},
		{"parse_relations", map[string]string{"classes": "Song,Nope"}, "Nope does not exist"},
		{"parse_relations", map[string]string{"classes": "VaultSecret"}, "does not exist or is not accessible"},
		{"class_overview", nil, "class_name is required"},
		{"class_overview", map[string]string{"class_name": "VaultSecret"}, "does not exist or is not accessible"},
		{"class_overview", map[string]string{"class_name": "Sng"}, "Did you mean Song"},
		{"class_overview", map[string]string{"class_name": "Song; drop"}, "not a valid Parse class name"},
		{"class_overview", map[string]string{"class_name": "_SCHEMA"}, "does not exist or is not accessible"},
		{"count_by", map[string]string{"class_name": "Song"}, "group_by is required"},
		{"count_by", map[string]string{"class_name": "Song", "group_by": "ge nre"}, "not a valid field name"},
		{"count_by", map[string]string{"class_name": "Song", "group_by": "nope"}, `no field "nope"`},
		{"count_by", map[string]string{"class_name": "_User", "group_by": "_hashed_password"}, "not a valid field name"},
		{"count_by", map[string]string{"class_name": "Playlist", "group_by": "songs"}, "Relation"},
		{"recent_activity", map[string]string{"class_name": "Song", "limit": "ten"}, "not a whole number"},
		{"find_relationship", map[string]string{"parent_class": "Artist", "parent_id": "bad id!", "child_class": "Song", "pointer_field": "artist"}, "not a valid objectId"},
		{"find_relationship", map[string]string{"parent_class": "Artist", "parent_id": artist, "child_class": "Song", "pointer_field": "title"}, "Pointer<Artist> fields are: artist"},
		{"find_relationship", map[string]string{"parent_class": "Artist", "parent_id": artist, "child_class": "Song"}, "pointer_field is required"},
		{"find_relationship", map[string]string{"parent_class": "VaultSecret", "parent_id": artist, "child_class": "Song", "pointer_field": "artist"}, "does not exist"},
		{"created_in_range", map[string]string{"class_name": "Song", "since": "yesterday"}, "not an ISO 8601 date"},
		{"created_in_range", map[string]string{"class_name": "Song", "since": "2020-13-45"}, "not an ISO 8601 date"},
		{"created_in_range", map[string]string{"class_name": "Song", "since": "2021-01-01", "until": "2020-01-01"}, "must be after since"},
		{"overdue_invoices", map[string]string{}, "user_id is required"},
		{"overdue_invoices", map[string]string{"user_id": "x y"}, "not a valid objectId"},
		{"overdue_invoices", map[string]string{"user_id": demo.UserCarolID, "since": "soon"}, "not an ISO 8601 date"},
		{"overdue_invoices", map[string]string{"user_id": demo.UserCarolID, "klass": "VaultSecret"}, "does not exist or is not accessible"},
		{"overdue_invoices", map[string]string{"user_id": demo.UserCarolID, "note": "a\x00b"}, "control characters"},
		{"overdue_invoices", map[string]string{"user_id": demo.UserCarolID, "note": strings.Repeat("x", 501)}, "longer than 500"},
	}
	for _, c := range bad {
		msg := rpcError(t, getPrompt(r, c.name, c.args), -32602)
		if !strings.Contains(msg, c.mention) {
			t.Errorf("%s %v: message %q lacks %q", c.name, c.args, msg, c.mention)
		}
	}
}

func TestConfiguredPromptErrorsFailStartup(t *testing.T) {
	cases := map[string]string{
		"undeclared placeholder": "invalid_prompt_undeclared_placeholder",
		"unknown type":           "invalid_prompt_unknown_type",
		"built-in name":          "invalid_prompt_builtin_name",
	}
	for name, policy := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(binary)
			cmd.Env = env(scratchEnv(t, policyFile(t, policy))...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-ctx.Done():
				_ = cmd.Process.Kill()
				t.Fatal("the server started despite a broken prompt")
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "prompts[0]") {
				t.Fatalf("exit %v, stderr %s", err, stderr.String())
			}
			t.Logf("stderr: %s", strings.TrimSpace(stderr.String()))
		})
	}
}
