package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"sync"
)

// pageStyle is the pages' only styling, allowed by its hash: the pages
// load nothing from anywhere and run no script.
const pageStyle = `body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}` +
	`h1{font-size:1.3rem}label{display:block;margin:.8rem 0 .2rem}input[type=text],input[type=password]{width:100%;padding:.4rem;box-sizing:border-box}` +
	`button{margin:1rem .5rem 0 0;padding:.5rem 1.2rem}.error{color:#a00}.note{color:#555;font-size:.9rem}code{word-break:break-all}`

var styleHash = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// pages are parsed on the first sign-in page rather than at start-up: a
// server that never serves one does not keep them (docs/performance.md
// "Idle memory").
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Parse(pageTemplates))
})

const pageTemplates = `
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>{{.Title}}</title><style>{{.Style}}</style></head><body>{{end}}
{{define "client"}}<p><strong>{{if .ClientName}}{{.ClientName}}{{else}}An unnamed application{{end}}</strong>{{if .ClientURI}} (<a href="{{.ClientURI}}" rel="noopener noreferrer">{{.ClientURI}}</a>){{end}} asks to use this Parse app's data as you.</p><p class="note">After you approve, you are sent to <code>{{.RedirectURI}}</code></p>{{end}}
{{define "login"}}{{template "head" .}}<h1>Sign in to the Parse app</h1>{{template "client" .}}
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}"><input type="hidden" name="request" value="{{.Request}}"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="step" value="login">
<label for="username">Username</label><input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" required value="{{.Username}}">
<label for="password">Password</label><input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>
<p class="note">Your password goes to the Parse app's own login; this server never stores it.</p></body></html>{{end}}
{{define "consent"}}{{template "head" .}}<h1>Allow access?</h1>{{template "client" .}}
<p>It will act as <strong>you</strong>, seeing and doing only what the Parse app lets you, with these permissions:</p><ul>{{range .Scopes}}<li><code>{{.}}</code></li>{{end}}</ul>
{{if .Narrowed}}<p class="note">It asked for more than this server allows; it gets the permissions above only.</p>{{end}}
<form method="post" action="{{.Action}}"><input type="hidden" name="request" value="{{.Request}}"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="step" value="consent">
<button type="submit" name="decision" value="approve">Allow</button><button type="submit" name="decision" value="deny">Deny</button></form></body></html>{{end}}
{{define "error"}}{{template "head" .}}<h1>This sign-in cannot continue</h1><p class="error">{{.Error}}</p><p class="note">Go back to the application and start again.</p></body></html>{{end}}
`

// page is what the templates show. Every field a client or the app chose
// is escaped by html/template; the client_uri is https only.
type page struct {
	Title                                  string
	Style                                  template.CSS
	ClientName, ClientURI, RedirectURI     string
	Action, Request, CSRF, Username, Error string
	Scopes                                 []string
	Narrowed                               bool
}

// render writes a page with headers that keep it to itself: a CSP allowing
// only its own style and form posts to this server (and, from the consent
// page, the client's redirect URI, which browsers check on the redirect a
// form post answers with), no framing (the consent button cannot be
// clickjacked), no caching, no referrer.
func render(w http.ResponseWriter, status int, name string, p page, formTarget string) {
	p.Style = template.CSS(pageStyle)
	if p.Title == "" {
		p.Title = "Sign in"
	}
	formAction := "'self'"
	if formTarget != "" {
		formAction += " " + formTarget
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+styleHash+"; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pages().ExecuteTemplate(w, name, p)
}

func errorPage(w http.ResponseWriter, status int, msg string) {
	render(w, status, "error", page{Title: "Sign-in error", Error: msg}, "")
}

// cspSource is the CSP source expression of a redirect URI: its origin for
// http(s), its scheme for a native app's private-use scheme. The URI was
// parsed and checked at registration, so it holds no space or semicolon;
// anything else yields "" (no extra target).
func cspSource(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return ""
	}
	src := u.Scheme + ":"
	if u.Scheme == "http" || u.Scheme == "https" {
		src = u.Scheme + "://" + u.Host
	}
	for _, c := range src {
		if c <= ' ' || c == ';' || c == ',' || c == '\'' || c > '~' {
			return ""
		}
	}
	return src
}
