package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Webhook accepts GitHub's push and pull_request events, checks their
// HMAC-SHA256 signature against the shared secret, and triggers a pass
// (Loop.Run's trigger) on a push to the base branch or a closed pull
// request.
//
// Every request is bounded before its body is read: at most MaxInFlight
// at once (503 past it), a body of at most maxWebhookBody (413), read
// within webhookReadTimeout; one without a well-formed signature header
// or delivery ID is refused unread. Nothing is acted on, and nothing but
// an error is answered, before the signature holds; a delivery whose ID
// or signature was seen among the last recentDeliveries is refused as a
// replay (409).
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
	// MaxInFlight bounds the events read at once; default 4.
	MaxInFlight int

	once   sync.Once
	slots  chan struct{}
	recent *recentSet
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
)

func (h *Webhook) init() {
	h.once.Do(func() {
		n := h.MaxInFlight
		if n <= 0 {
			n = 4
		}
		h.slots = make(chan struct{}, n)
		h.recent = newRecentSet(2 * recentDeliveries) // an ID and a signature each
	})
}

func (h *Webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.init()
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	sig, delivery, code, why := h.precheck(req)
	if code != 0 {
		h.logger().Warn("webhook refused before reading", "remote", req.RemoteAddr, "why", why)
		http.Error(w, why, code)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(webhookReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxWebhookBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "body unreadable", http.StatusBadRequest)
		}
		return
	}
	if !validSignature(h.Secret, body, "sha256="+hex.EncodeToString(sig)) {
		h.logger().Warn("webhook with a bad signature refused", "remote", req.RemoteAddr)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if !h.recent.add("delivery:"+delivery, "signature:"+string(sig)) {
		h.logger().Warn("replayed webhook refused", "remote", req.RemoteAddr, "delivery", delivery)
		http.Error(w, "delivery already handled", http.StatusConflict)
		return
	}
	h.act(req.Header.Get("X-GitHub-Event"), body)
	w.WriteHeader(http.StatusAccepted)
}

// precheck looks at what can be checked before the body is read: a
// secret is set, the body is not announced larger than the bound, and
// the signature and delivery ID are well formed. It returns the
// signature and delivery ID, or the status and reason to refuse with.
func (h *Webhook) precheck(req *http.Request) (sig []byte, delivery string, code int, why string) {
	if len(h.Secret) == 0 {
		return nil, "", http.StatusUnauthorized, "no secret configured"
	}
	if req.ContentLength > maxWebhookBody {
		return nil, "", http.StatusRequestEntityTooLarge, "body too large"
	}
	got, ok := strings.CutPrefix(req.Header.Get("X-Hub-Signature-256"), "sha256=")
	sig, err := hex.DecodeString(got)
	if !ok || err != nil || len(sig) != sha256.Size {
		return nil, "", http.StatusUnauthorized, "bad signature"
	}
	delivery = req.Header.Get("X-GitHub-Delivery")
	if !validDeliveryID(delivery) {
		return nil, "", http.StatusBadRequest, "missing or malformed X-GitHub-Delivery"
	}
	return sig, delivery, 0, ""
}

// act triggers a pass for the events that ask for one.
func (h *Webhook) act(event string, body []byte) {
	var ev struct {
		Ref    string `json:"ref"`
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &ev)
	switch {
	case event == "push" && ev.Ref == "refs/heads/"+h.Base, event == "pull_request" && ev.Action == "closed":
		select {
		case h.Trigger <- struct{}{}:
		default: // a pass is already due
		}
	}
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

// recentSet remembers the last n keys added, in a ring.
type recentSet struct {
	mu   sync.Mutex
	keys map[[sha256.Size]byte]bool
	ring [][sha256.Size]byte
	next int
}

func newRecentSet(n int) *recentSet {
	return &recentSet{keys: make(map[[sha256.Size]byte]bool, n), ring: make([][sha256.Size]byte, 0, n)}
}

// add records keys and reports true, or reports false, recording
// nothing, when one of them is among the recent ones.
func (s *recentSet) add(keys ...string) bool {
	sums := make([][sha256.Size]byte, len(keys))
	for i, k := range keys {
		sums[i] = sha256.Sum256([]byte(k))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sum := range sums {
		if s.keys[sum] {
			return false
		}
	}
	for _, sum := range sums {
		if len(s.ring) < cap(s.ring) {
			s.ring = append(s.ring, sum)
		} else {
			delete(s.keys, s.ring[s.next])
			s.ring[s.next] = sum
			s.next = (s.next + 1) % cap(s.ring)
		}
		s.keys[sum] = true
	}
	return true
}
