package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// Webhook accepts GitHub's push and pull_request events, checks their
// HMAC-SHA256 signature against the shared secret, and triggers a pass
// (Loop.Run's trigger) on a push to the base branch or a closed pull
// request.
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
}

// maxWebhookBody bounds an event's body.
const maxWebhookBody = 5 << 20

func (h *Webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxWebhookBody+1))
	if err != nil || len(body) > maxWebhookBody {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if !validSignature(h.Secret, body, req.Header.Get("X-Hub-Signature-256")) {
		h.logger().Warn("webhook with a bad signature refused", "remote", req.RemoteAddr)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct {
		Ref    string `json:"ref"`
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &ev)
	switch event := req.Header.Get("X-GitHub-Event"); {
	case event == "ping":
	case event == "push" && ev.Ref == "refs/heads/"+h.Base, event == "pull_request" && ev.Action == "closed":
		select {
		case h.Trigger <- struct{}{}:
		default: // a pass is already due
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *Webhook) logger() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
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
