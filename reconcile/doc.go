// Package reconcile is cairn's loop. A pass fetches the GitOps repo's base
// branch, loads its specs and policies, observes the live state, plans every
// cluster and publishes each one's next step as a branch and a pull request
// (package publish); with Config.Hold it holds a cluster while the step
// merged last has not shown its "after" gates in the live state, and with
// Config.AutoMerge it merges the steps the policies let cairn merge once
// their "before" gates pass. Loop.Run passes on a timer and on the triggers
// of Webhook (GitHub push and pull_request events, HMAC-signed, JSON or
// form-encoded; Webhook.Server bounds headers, deadlines and connections,
// and slow senders cannot starve signed deliveries: webhookserver.go).
// cairn propose is one pass without the hold; cairn reconcile is Run.
//
// The package knows no database kind: the planner, the renderer, the live
// state and the gates come in through Config, wired by cmd/cairn from its
// table of kinds. It reads the renderer's layout only through
// renderer.ReadEntry.
//
// Metrics (metrics.go, githubmetrics.go, webhookmetrics.go) are the loop's Prometheus
// metrics, kept by Pass; Metrics.Handler serves them with /healthz and
// /readyz (docs/metrics.md).
//
// Imports: planner/live, planner/plan, planner/spec, policies, publish,
// publish/gitrepo, renderer for its layout reader and tree types, and the
// Prometheus client (prometheus, promhttp). It must not import the planner
// or its strategies, planner/gates, planner/observe, client-go, the
// runtime, the test beds or cmd/cairn.
package reconcile
