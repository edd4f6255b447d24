package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	mathrand "math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/validation"
)

// Limits of a subscription.
const (
	// MaxURLBytes bounds a target URL.
	MaxURLBytes = 2048
	// MaxEventTypes bounds a subscription's type filter: there are fewer
	// known types than this, so a longer list can only repeat them.
	MaxEventTypes = 64
	// DefaultOverlap is how long a rotated secret keeps signing beside the
	// new one when the rotation names no overlap.
	DefaultOverlap = 24 * time.Hour
	// MaxOverlap bounds a rotation's overlap window.
	MaxOverlap = 30 * 24 * time.Hour
)

// SecretPrefix starts every secret, as Standard Webhooks writes them.
const SecretPrefix = "whsec_"

// ValidateURL checks a target: an absolute http or https URL with a host,
// no credentials, no fragment. Whether its address may be dialled is
// decided at delivery time, against the resolved address (deliver.Guard).
func ValidateURL(raw string) error {
	if len(raw) > MaxURLBytes {
		return apierr.Invalid("url", "is %d bytes long; at most %d", len(raw), MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return apierr.Invalid("url", "must be an absolute http:// or https:// URL with a host, without credentials or fragment; got %q", raw)
	}
	return nil
}

// ValidateEvents checks a type filter (at least one type, each known, at
// most MaxEventTypes) and returns it without repeats.
func ValidateEvents(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, apierr.Invalid("events", "name at least one event type; known types: %s", strings.Join(KnownTypes(), ", "))
	}
	if len(names) > MaxEventTypes {
		return nil, apierr.Invalid("events", "names %d types; at most %d (there are only %d known types)", len(names), MaxEventTypes, len(KnownTypes()))
	}
	var out []string
	for i, n := range names {
		if _, ok := typeNamed(n); !ok {
			return nil, apierr.Invalid(fmt.Sprintf("events[%d]", i), "unknown event type %q; known types: %s", truncate(n, 100), strings.Join(KnownTypes(), ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ValidateFormat checks a format; "" is standard.
func ValidateFormat(f string) (string, error) {
	switch f {
	case "":
		return api.WebhookStandard, nil
	case api.WebhookStandard, api.WebhookSlack:
		return f, nil
	}
	return "", apierr.Invalid("format", "unknown format %q; want standard or slack", truncate(f, 100))
}

// ValidateFilters checks the optional session and plan filters.
func ValidateFilters(session, plan string) error {
	var errs []apierr.FieldError
	if session != "" {
		if m := validation.RuleMessage("session_id", session); m != "" {
			errs = append(errs, apierr.FieldError{Field: "session", Message: m})
		}
	}
	if plan != "" {
		if m := validation.RuleMessage("plan_name", plan); m != "" {
			errs = append(errs, apierr.FieldError{Field: "plan", Message: m})
		}
	}
	if len(errs) > 0 {
		return apierr.InvalidFields(errs)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// NewSecret returns a fresh signing secret: whsec_ and 32 random bytes in
// base64.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// newID returns a subscription id.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "wh_" + hex.EncodeToString(b)
}

// MessageID is a delivery's webhook-id: one per subscription and event,
// the same on every retry, redelivery and replica, so receivers drop
// duplicates by it.
func MessageID(webhookID string, seq int64) string {
	return "msg_" + strings.TrimPrefix(webhookID, "wh_") + "_" + strconv.FormatInt(seq, 10)
}

// Sign returns the webhook-signature header for a message under each of
// secrets: "v1,<base64 HMAC-SHA256 of id.timestamp.body>", space-separated
// (Standard Webhooks: a receiver accepts any one that verifies, which is
// how a rotation's overlap works).
func Sign(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	var sigs []string
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
		if err != nil {
			return "", fmt.Errorf("webhook secret is not base64 after %s", SecretPrefix)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// Schedule is the retry schedule: the delay before the retry after the
// n-th failed attempt (Schedule[n-1]), each spread by ±Jitter. Eleven
// attempts over about 24 hours; after the last the subscription is marked
// failing.
var Schedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// Jitter is the fraction by which each delay is spread at random, so that
// many subscriptions that failed together do not retry together.
const Jitter = 0.2

// Backoff returns the delay before the next attempt after failed attempts
// (1 after the first failure), and false when the schedule is used up.
func Backoff(schedule []time.Duration, failed int) (time.Duration, bool) {
	if failed < 1 || failed > len(schedule) {
		return 0, false
	}
	d := float64(schedule[failed-1])
	d *= 1 + Jitter*(2*mathrand.Float64()-1)
	return time.Duration(math.Round(d)), true
}

// Message is one delivery's content, built from an event.
type Message struct {
	ID        string
	Type      string
	Timestamp time.Time
	Body      []byte
}

// standardBody is the Standard Webhooks body; data is the event as the
// event log serves it.
type standardBody struct {
	Type      string    `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      api.Event `json:"data"`
}

// Build returns the message of event e, delivered as webhook type typ, to
// subscription id in format. base is the public URL the console's deep
// links start with.
func Build(id, format, typ, base string, e api.Event) (Message, error) {
	ts, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		ts = time.Time{}
	}
	m := Message{ID: MessageID(id, e.Seq), Type: typ, Timestamp: ts}
	switch format {
	case api.WebhookSlack:
		m.Body, err = json.Marshal(map[string]string{"text": Sentence(typ, base, e)})
	default:
		m.Body, err = json.Marshal(standardBody{Type: typ, Timestamp: e.Time, Data: e})
	}
	return m, err
}

// slackEscape escapes what Slack's mrkdwn reads as control characters.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// link is a Slack link to the console page at path under base.
func link(base, path string) string {
	if base == "" {
		return ""
	}
	return "<" + strings.TrimRight(base, "/") + path + ">"
}

// Sentence is the readable line of a slack-format message: what happened
// and the console page to open.
func Sentence(typ, base string, e api.Event) string {
	var d struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Review struct {
			State        string  `json:"state"`
			PlanRevision *int64  `json:"plan_revision"`
			DecidedBy    *string `json:"decided_by"`
			Feedback     *string `json:"feedback"`
		} `json:"review"`
		Plan           string `json:"plan"`
		Name           string `json:"name"`
		StepID         string `json:"step_id"`
		ClaimedBy      string `json:"claimed_by"`
		ClaimExpiresAt string `json:"claim_expires_at"`
		Tool           string `json:"tool"`
		Reason         string `json:"reason"`
		Status         string `json:"status"`
		Host           string `json:"host"`
	}
	_ = json.Unmarshal(e.Data, &d)
	title := d.Title
	if title == "" {
		title = e.SessionID
	}
	rev := int64(0)
	if d.Review.PlanRevision != nil {
		rev = *d.Review.PlanRevision
	}
	session := url.PathEscape(e.SessionID)
	review := link(base, "/ui/sessions/"+session+"/review?revision="+strconv.FormatInt(rev, 10))
	plan := e.Plan
	planLink := link(base, "/ui/plans/"+url.PathEscape(plan))
	var s string
	switch typ {
	case api.WebhookReviewRequested:
		s = fmt.Sprintf("Plan revision %d of *%s* waits for your review", rev, slackEscape(title))
		return withLink(s, review)
	case api.WebhookReviewDecided:
		verdict := "approved"
		if e.Type == api.EventSessionReviewRejected {
			verdict = "rejected"
		}
		s = fmt.Sprintf("Plan revision %d of *%s* was %s by %s", rev, slackEscape(title), verdict, slackEscape(e.Actor))
		return withLink(s, review)
	case api.WebhookStepCompleted:
		s = fmt.Sprintf("Step *%s* of plan *%s* is complete", slackEscape(d.StepID), slackEscape(plan))
		return withLink(s, planLink)
	case api.WebhookStepClaimExpired:
		s = fmt.Sprintf("The claim of %s on step *%s* of plan *%s* ran out at %s; another worker may claim it now",
			slackEscape(d.ClaimedBy), slackEscape(d.StepID), slackEscape(plan), slackEscape(d.ClaimExpiresAt))
		return withLink(s, planLink)
	case api.WebhookPlanChanged:
		what := map[string]string{api.EventPlanCreated: "was created", api.EventPlanUpdated: "was updated",
			api.EventPlanStatusChanged: "changed status to " + slackEscape(d.Status), api.EventPlanDeleted: "was deleted"}[e.Type]
		s = fmt.Sprintf("Plan *%s* %s (revision %d, by %s)", slackEscape(plan), what, e.Revision, slackEscape(e.Actor))
		if e.Type == api.EventPlanDeleted {
			return s
		}
		return withLink(s, planLink)
	case api.WebhookToolCallDenied:
		s = fmt.Sprintf("Plan mode denied the tool *%s* to session *%s*", slackEscape(d.Tool), slackEscape(e.SessionID))
		return withLink(s, link(base, "/ui/sessions/"+session))
	case api.WebhookToolCallUnjudged:
		what := "that planserver never judged"
		if d.Reason == api.UnjudgedDenied {
			what = "that planserver had denied"
		}
		s = fmt.Sprintf("The tool *%s* ran in session *%s* (%s) %s", slackEscape(d.Tool), slackEscape(e.SessionID), slackEscape(d.Host), what)
		return withLink(s, link(base, "/ui/sessions/"+session))
	case api.EventToolCallOutOfScope:
		var o struct {
			Path, Command string
			ScopeRevision int64 `json:"scope_revision"`
		}
		_ = json.Unmarshal(e.Data, &o)
		what := o.Path
		if what == "" {
			what = o.Command
		}
		s = fmt.Sprintf("Scoped build denied the tool *%s* (%s) to session *%s*: outside the scope approved with plan revision %d",
			slackEscape(d.Tool), slackEscape(what), slackEscape(e.SessionID), o.ScopeRevision)
		return withLink(s, link(base, "/ui/sessions/"+session))
	case api.EventSessionScopeChanged:
		var c struct{ Reason string }
		_ = json.Unmarshal(e.Data, &c)
		what := map[string]string{"approved": "was granted by " + slackEscape(e.Actor), "lifted": "was lifted by " + slackEscape(e.Actor) +
			": it builds without a scope now"}[c.Reason]
		if what == "" {
			what = "changed with its parent's"
		}
		s = fmt.Sprintf("The build scope of session *%s* %s", slackEscape(e.SessionID), what)
		return withLink(s, link(base, "/ui/sessions/"+session))
	}
	s = fmt.Sprintf("planserver event %s (seq %d)", e.Type, e.Seq)
	switch {
	case e.Plan != "":
		return withLink(s+" on plan *"+slackEscape(plan)+"*", planLink)
	case e.SessionID != "":
		return withLink(s+" on session *"+slackEscape(e.SessionID)+"*", link(base, "/ui/sessions/"+session))
	}
	return s
}

func withLink(s, l string) string {
	if l == "" {
		return s
	}
	return s + ": " + l
}
