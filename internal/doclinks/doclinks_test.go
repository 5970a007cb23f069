package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// documents are the markdown files whose links are checked.
func documents(t *testing.T) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md", "SECURITY.md", "ARCHITECTURE.md"}
	for _, d := range docs {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(d, root+string(filepath.Separator))))
	}
	sort.Strings(files)
	return files
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// prose returns a markdown file's lines outside fenced code blocks, with the
// lines inside blocks blanked (so line numbers stay right).
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fence.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// slug is GitHub's anchor for a heading: the text lowercased, every
// character that is not a letter, mark, digit, '_', '-' or space dropped,
// each space made a '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bold is a run-in heading: a paragraph's or item's opening **Name.**
var bold = regexp.MustCompile(`^\s*(?:[-*]\s+)?\*\*([^*]+?)\.?\*\*`)

// sections are the slugs of a markdown file's headings and run-in bold
// headings, the names a citation may use.
func sections(text string) map[string]bool {
	set := anchors(text)
	for _, l := range prose(text) {
		if m := bold.FindStringSubmatch(l); m != nil {
			set[slug(m[1])] = true
		}
	}
	return set
}

// anchors are a markdown file's heading anchors, with GitHub's -1, -2 …
// suffixes for repeated headings.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	count := map[string]int{}
	for _, l := range prose(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := count[s]; n > 0 {
			set[s+"-"+strconv.Itoa(n)] = true
		} else {
			set[s] = true
		}
		count[s]++
	}
	return set
}

func read(t *testing.T, rel string) string {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRelativeLinksResolve: every relative link of the documents names a
// file or directory that exists, and every #anchor a heading of its file.
func TestRelativeLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := cache[rel]; ok {
			return a
		}
		cache[rel] = anchors(read(t, rel))
		return cache[rel]
	}
	for _, doc := range documents(t) {
		for n, l := range prose(read(t, doc)) {
			l = codeSpan.ReplaceAllString(l, "")
			for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
				target := m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				rel := doc
				if path != "" {
					rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), path)))
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", doc, n+1, target, rel)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(rel, ".md") && !anchorsOf(rel)[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", doc, n+1, target, rel, anchor)
				}
			}
		}
	}
}

// citation is a document and a section named in quotes after it, as code
// comments and documents cite them: README "Progress", SECURITY.md, "Writes",
// docs/writes.md "Declared actions". A comment's line breaks (and their //
// or #) are read as spaces first, so a name may wrap.
var citation = regexp.MustCompile(`(README|SECURITY|ARCHITECTURE|docs/[a-z0-9-]+)(?:\.md)?'?s?,? "([^"\n]+)"`)

var commentBreak = regexp.MustCompile(`"?\n\s*(//|#)\s*`)

// TestCitedSectionsExist: every section a source file or document cites by
// name is a heading of the document it names (compared by anchor, so case
// and punctuation do not matter).
func TestCitedSectionsExist(t *testing.T) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" && path != root || rel == "internal/doclinks" {
				return filepath.SkipDir // this package's own examples are no citations
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go"), strings.HasSuffix(rel, ".md"), strings.HasSuffix(rel, ".yaml"),
			rel == "Makefile", rel == ".ci/run":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := commentBreak.ReplaceAllStringFunc(string(b), func(s string) string {
			if strings.HasPrefix(s, `"`) {
				return `"` // a quoted name that ends at a line's end stays closed
			}
			return " "
		})
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			doc := m[1] + ".md"
			if _, err := os.Stat(filepath.Join(root, doc)); err != nil {
				t.Errorf("%s cites %s %q: %s does not exist", rel, m[1], m[2], doc)
				continue
			}
			if !citable(sections(read(t, doc)), slug(m[2])) {
				t.Errorf("%s cites %s %q, which is no heading (nor bold run-in heading) of %s", rel, m[1], m[2], doc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// citable: the cited name is a section, or the start of one ("Scale-out"
// for "Scale-out (HTTP, 2026-07-28)").
func citable(set map[string]bool, name string) bool {
	if set[name] {
		return true
	}
	for s := range set {
		if strings.HasPrefix(s, name+"-") {
			return true
		}
	}
	return false
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Decisions where the spec is silent", "decisions-where-the-spec-is-silent"},
		{"The `where` language", "the-where-language"},
		{"Chat (`parse-mcp chat`, `parse-mcp ask`)", "chat-parse-mcp-chat-parse-mcp-ask"},
		{"Scale-out — stateless", "scale-out--stateless"},
		{"Outputs: one rule", "outputs-one-rule"},
	} {
		if got := slug(c.in); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
