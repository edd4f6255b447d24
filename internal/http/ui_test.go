package http_test

import (
	"io"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/planserver/planserver/internal/apitest"
	"github.com/planserver/planserver/internal/app"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/web"
)

func init() {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
}

// get fetches path outside the contract (assets and deep links are not
// operations of it) and returns the response with its body read.
func rawGet(t *testing.T, env *apitest.Env, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.Server.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := *env.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestUIServesTheConsole(t *testing.T) {
	env := apitest.New(t, func(c *app.Config) { c.Auth = planhttp.AuthToken })

	// The page is public even with tokens: it holds no data.
	r := env.Call("GET", "/ui/", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/ui/: %d %v", r.Status, r.Header)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'",
		"require-trusted-types-for 'script'", "frame-ancestors 'none'", "form-action 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows inline code: %q", csp)
	}
	if r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers: %v", r.Header)
	}
	page := string(r.Body)
	if !strings.Contains(page, `<script type="module" src="/ui/assets/js/app.js">`) {
		t.Errorf("the page does not load the app: %s", page)
	}
	// No inline script or style: the CSP would refuse them.
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || strings.Contains(page, "<style") ||
		strings.Contains(page, " style=") || regexp.MustCompile(` on[a-z]+=`).MatchString(page) {
		t.Errorf("inline script or style in index.html")
	}

	// Revalidation.
	if r2 := env.Call("GET", "/ui/", nil, "If-None-Match", r.Header.Get("ETag")); r2.Status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", r2.Status)
	}

	// /ui redirects, keeping the query.
	redirect := *env
	client := *env.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	redirect.Client = &client
	if r := redirect.Call("GET", "/ui?x=1", nil); r.Status != http.StatusMovedPermanently || r.Header.Get("Location") != "/ui/?x=1" {
		t.Errorf("/ui: %d %v", r.Status, r.Header)
	}

	// Deep links serve the page: the review link an agent hands out, with
	// a session id that has dots in it, and every other console path.
	if r := env.Call("GET", "/ui/sessions/billing.worker/review?revision=3", nil); r.Status != http.StatusOK || string(r.Body) != page {
		t.Errorf("review deep link: %d", r.Status)
	}
	for _, p := range []string{"/ui/plans/csv-upload", "/ui/sessions", "/ui/sessions/a.b.c", "/ui/anything/else"} {
		resp, body := rawGet(t, env, p)
		if resp.StatusCode != http.StatusOK || body != page || resp.Header.Get("Content-Security-Policy") != csp {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}

	// Every embedded asset is served, with the type its extension names
	// (walking the files keeps a new script from going untested).
	types := map[string]string{
		".js":  "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8",
		".svg": "image/svg+xml",
		".txt": "text/plain; charset=utf-8", // the vendored libraries' licenses and versions
	}
	served := 0
	err := fs.WalkDir(web.Files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := types[path.Ext(p)]
		if !ok {
			t.Errorf("%s: an asset type this test does not know", p)
			return nil
		}
		served++
		resp, body := rawGet(t, env, "/ui/"+p)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ct || body == "" {
			t.Errorf("%s: %d %q", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return nil
	})
	if err != nil || served < 10 {
		t.Fatalf("walk the console's assets: %d served, %v", served, err)
	}
	// A missing asset is 404, not the page (a script answered with HTML
	// fails in confusing ways).
	for _, p := range []string{"/ui/assets/js/missing.js", "/ui/assets/", "/ui/assets/js/../../index.html"} {
		resp, _ := rawGet(t, env, p)
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMovedPermanently {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestUIAssetsHaveNoMarkupSinks keeps the console's promise that plan
// text never reaches an HTML parser: no innerHTML, outerHTML,
// insertAdjacentHTML, document.write or eval anywhere in its scripts (the
// CSP's Trusted Types would make them throw in the browser anyway).
func TestUIAssetsHaveNoMarkupSinks(t *testing.T) {
	sinks := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|createContextualFragment|setHTMLUnsafe|parseHTMLUnsafe|DOMParser`)
	n := 0
	err := fs.WalkDir(web.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		n++
		b, err := fs.ReadFile(web.Files, p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if sinks.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d uses a markup sink: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk the console's scripts: %d files, %v", n, err)
	}
}
