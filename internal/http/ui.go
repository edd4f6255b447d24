package http

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/http/response"
	"github.com/planserver/planserver/web"
)

// uiPrefix is where the review console is served.
const uiPrefix = "/ui/"

// uiCSP is the console's Content-Security-Policy. Scripts, styles and
// everything else come from this origin only, no inline script or style
// attribute runs, plan text can never reach an HTML parser (Trusted
// Types: the console assigns no markup strings at all), images in plans
// are not loaded (img-src allows only the console's own icon), and no
// form may submit anywhere: the sign-in form is handled by script, so a
// failure there can never put a token into a URL.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// uiTypes are the media types of the console's files, set here rather than
// taken from the host's MIME tables, which differ between machines.
var uiTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8", // vendored libraries' licenses and versions
	".png":  "image/png",
}

// uiFile is one embedded file, read once.
type uiFile struct {
	body        []byte
	contentType string
	etag        string
}

// uiFiles reads the embedded console into memory. The files are small and
// fixed for the life of the binary, so each gets a content-hash ETag.
func uiFiles() map[string]uiFile {
	files := map[string]uiFile{}
	err := fs.WalkDir(web.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := uiTypes[path.Ext(p)]
		if !ok {
			return nil // not a type the console serves
		}
		body, err := fs.ReadFile(web.Files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		files[p] = uiFile{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("read the embedded console: " + err.Error()) // the embed is part of the binary
	}
	return files
}

// uiRoutes serves the console: /ui redirects to /ui/, assets are served
// with their types, and every other path under /ui/ is the single page,
// which routes in the browser (so deep links such as
// /ui/sessions/{id}/review?revision=N work when opened directly). The
// page is public: it holds no data, and everything it shows comes from
// /v1 with the user's token.
func (s *Server) uiRoutes(r chi.Router) {
	files := uiFiles()
	r.Get("/ui", func(w http.ResponseWriter, r *http.Request) {
		target := uiPrefix
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
	})
	r.Get("/ui/*", func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "*")
		f, ok := files[name]
		if !ok {
			// A missing asset is 404: answering the page instead would make
			// a missing script fail with a confusing type error. Every
			// other path is a page of the console (session ids may hold
			// dots, so a path's look says nothing).
			if strings.HasPrefix(name, "assets/") {
				response.Problem(w, r, apierr.New(apierr.NotFound, "the console has no file %s", name))
				return
			}
			f = files["index.html"]
		}
		h := w.Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Content-Type", f.contentType)
		h.Set("ETag", f.etag)
		if match := r.Header.Get("If-None-Match"); match != "" && match == f.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(f.body)
	})
}
