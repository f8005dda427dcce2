package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Webhook accepts GitHub's push and pull_request events, checks their
// HMAC-SHA256 signature against the shared secret, and triggers a pass
// (Loop.Run's trigger) on a push to the base branch or a closed pull
// request. Both of GitHub's content types are read: application/json,
// and application/x-www-form-urlencoded (the JSON in its payload field);
// any other is refused (415) unread.
//
// Every request is bounded before its body is read: one without a
// well-formed signature header, delivery ID or content type is refused
// unread; a body of at most maxWebhookBody (413), read within
// webhookReadTimeout. At most MaxReaders bodies are read at once: a
// request past that cuts off the one that has been reading longest (a
// slow sender; a delivery from GitHub is read in milliseconds), so slow
// senders can delay signed deliveries but never starve them. Once its
// signature holds, a delivery leaves the readers' pool and is acted on
// in slots of its own (maxVerified), which unsigned requests never hold.
// Nothing is acted on, and nothing but an error is answered, before the
// signature holds; a delivery whose ID or signature was seen among the
// last recentDeliveries is refused as a replay (409).
//
// Every refusal is logged and counted (Metrics). Server wraps the
// handler in an http.Server with the connection-level bounds (header
// size, deadlines, connections).
type Webhook struct {
	// Secret is the webhook's shared secret; an empty one refuses every
	// event.
	Secret []byte
	// Base is the branch the specs live on.
	Base string
	// Trigger gets one value per event that asks for a pass; an event
	// while a pass is already due is dropped.
	Trigger chan<- struct{}
	// Log gets the refused events; default discard.
	Log *slog.Logger
	// Metrics counts the accepted and refused requests; nil counts none.
	Metrics *WebhookMetrics
	// MaxReaders bounds the bodies read at once; default 8.
	MaxReaders int
	// MaxConns bounds the connections Server keeps open; default 256.
	MaxConns int

	once     sync.Once
	readers  *readerPool
	verified chan struct{}
	recent   *recentSet
	conns    *connTracker
}

const (
	// maxWebhookBody bounds an event's body: GitHub's push and
	// pull_request payloads are far smaller, and a larger one waits for
	// the next timed pass.
	maxWebhookBody = 1 << 20
	// webhookReadTimeout bounds the time to read one body.
	webhookReadTimeout = 10 * time.Second
	// recentDeliveries is how many delivery IDs and signatures are kept
	// to refuse replays.
	recentDeliveries = 4096
	// maxVerified bounds the verified deliveries acted on at once (each
	// holds its body while its JSON is decoded); more wait their turn.
	maxVerified = 4
)

func (h *Webhook) init() {
	h.once.Do(func() {
		n := h.MaxReaders
		if n <= 0 {
			n = 8
		}
		h.readers = &readerPool{max: n}
		h.verified = make(chan struct{}, maxVerified)
		h.recent = newRecentSet(2 * recentDeliveries) // an ID and a signature each
		c := h.MaxConns
		if c <= 0 {
			c = 256
		}
		h.conns = &connTracker{max: c, refuse: h.refuse, conns: map[net.Conn]*trackedConn{}}
	})
}

func (h *Webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.init()
	h.conns.handling(req.Context())
	if req.Method != http.MethodPost {
		h.refuseHTTP(w, req, refusedMethod, http.StatusMethodNotAllowed, "POST only")
		return
	}
	sig, delivery, form, r := h.precheck(req)
	if r.code != 0 {
		h.refuseHTTP(w, req, r.reason, r.code, r.why)
		return
	}
	body, r := h.read(w, req)
	if r.code != 0 {
		h.refuseHTTP(w, req, r.reason, r.code, r.why)
		return
	}
	if !validSignature(h.Secret, body, "sha256="+hex.EncodeToString(sig)) {
		h.refuseHTTP(w, req, refusedSignature, http.StatusUnauthorized, "bad signature")
		return
	}
	// Verified: from here on the delivery holds a slot no unsigned
	// request can take.
	h.verified <- struct{}{}
	defer func() { <-h.verified }()
	if !h.recent.add("delivery:"+delivery, "signature:"+string(sig)) {
		h.refuseHTTP(w, req, refusedReplay, http.StatusConflict, "delivery already handled")
		return
	}
	if r := h.act(req.Header.Get("X-GitHub-Event"), body, form); r.code != 0 {
		h.refuseHTTP(w, req, r.reason, r.code, r.why)
		return
	}
	h.Metrics.accepted()
	w.WriteHeader(http.StatusAccepted)
}

// refusal is why a request is refused: the counter's reason, the status
// and the text answered. The zero refusal lets the request through.
type refusal struct {
	reason string
	code   int
	why    string
}

// precheck looks at what can be checked before the body is read: a
// secret is set, the body is not announced larger than the bound, the
// signature and delivery ID are well formed and the content type is one
// GitHub sends. It returns the signature, the delivery ID and whether
// the body is form-encoded, or the refusal.
func (h *Webhook) precheck(req *http.Request) (sig []byte, delivery string, form bool, r refusal) {
	if len(h.Secret) == 0 {
		return nil, "", false, refusal{refusedNoSecret, http.StatusUnauthorized, "no secret configured"}
	}
	if req.ContentLength > maxWebhookBody {
		return nil, "", false, refusal{refusedTooLarge, http.StatusRequestEntityTooLarge, "body too large"}
	}
	got, ok := strings.CutPrefix(req.Header.Get("X-Hub-Signature-256"), "sha256=")
	sig, err := hex.DecodeString(got)
	if !ok || err != nil || len(sig) != sha256.Size {
		return nil, "", false, refusal{refusedSignature, http.StatusUnauthorized, "bad signature"}
	}
	delivery = req.Header.Get("X-GitHub-Delivery")
	if !validDeliveryID(delivery) {
		return nil, "", false, refusal{refusedDelivery, http.StatusBadRequest, "missing or malformed X-GitHub-Delivery"}
	}
	form, ok = contentType(req.Header.Get("Content-Type"))
	if !ok {
		return nil, "", false, refusal{refusedFormat, http.StatusUnsupportedMediaType,
			"Content-Type must be application/json or application/x-www-form-urlencoded"}
	}
	return sig, delivery, form, refusal{}
}

// contentType reports whether a Content-Type is form-encoded, and
// whether it is one of the two GitHub sends.
func contentType(header string) (form, ok bool) {
	t, _, err := mime.ParseMediaType(header)
	switch {
	case err != nil:
		return false, false
	case t == "application/json":
		return false, true
	case t == "application/x-www-form-urlencoded":
		return true, true
	}
	return false, false
}

// read reads the body within the bounds, holding a reader slot while it
// does; a reader cut off for a newer one is refused (408).
func (h *Webhook) read(w http.ResponseWriter, req *http.Request) ([]byte, refusal) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(webhookReadTimeout))
	slot := h.readers.enter(func() { _ = rc.SetReadDeadline(time.Now()) })
	if slot.cut.Load() {
		return nil, refusal{refusedCutOff, http.StatusRequestTimeout, "cut off for a newer request: send faster"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxWebhookBody))
	h.readers.leave(slot)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return body, refusal{}
	case errors.As(err, &tooLarge):
		return nil, refusal{refusedTooLarge, http.StatusRequestEntityTooLarge, "body too large"}
	case slot.cut.Load():
		return nil, refusal{refusedCutOff, http.StatusRequestTimeout, "cut off for a newer request: send faster"}
	case isTimeout(err):
		return nil, refusal{refusedSlow, http.StatusRequestTimeout, "body not read in time"}
	}
	return nil, refusal{refusedUnreadable, http.StatusBadRequest, "body unreadable"}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// act triggers a pass for the events that ask for one; a body that is
// not the JSON (or the form holding it) GitHub sends is refused.
func (h *Webhook) act(event string, body []byte, form bool) refusal {
	if form {
		values, err := url.ParseQuery(string(body))
		if err != nil || !values.Has("payload") {
			return refusal{refusedPayload, http.StatusBadRequest, "form-encoded body without a payload field"}
		}
		body = []byte(values.Get("payload"))
	}
	var ev struct {
		Ref    string `json:"ref"`
		Action string `json:"action"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return refusal{refusedPayload, http.StatusBadRequest, "payload is not a JSON object"}
	}
	// A merge (closed) moves the base; a pull request opened, pushed to
	// (synchronize), reopened or retargeted (edited) needs its cairn/plan
	// status (others.go).
	switch {
	case event == "push" && ev.Ref == "refs/heads/"+h.Base,
		event == "pull_request" && slices.Contains([]string{"closed", "opened", "synchronize", "reopened", "edited"}, ev.Action):
		select {
		case h.Trigger <- struct{}{}:
		default: // a pass is already due
		}
	}
	return refusal{}
}

// refuseHTTP answers a refused request, logging and counting it.
func (h *Webhook) refuseHTTP(w http.ResponseWriter, req *http.Request, reason string, code int, why string) {
	h.refuse(reason, req.RemoteAddr)
	http.Error(w, why, code)
}

// refuse logs and counts one refusal.
func (h *Webhook) refuse(reason, remote string) {
	h.Metrics.refused(reason)
	h.logger().Warn("webhook request refused", "reason", reason, "remote", remote)
}

func (h *Webhook) logger() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// validDeliveryID accepts GitHub's delivery GUIDs: up to 64 letters,
// digits and dashes.
func validDeliveryID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// validSignature checks GitHub's "sha256=<hex HMAC of the body>" header in
// constant time.
func validSignature(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}
