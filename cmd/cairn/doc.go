// Command cairn turns cluster specs kept in Git into ordered plans of
// small, safe steps, each reviewed as a pull request.
//
//	cairn validate PATH...                   check spec files
//	cairn schema [KIND] [--out DIR]          print or write the spec JSON Schemas
//	cairn plan --repo DIR [--live FILE]      plan every cluster of a repo
//	cairn render --repo DIR [--out DIR]      write each cluster's kustomize tree under rendered/
//	cairn status [CLUSTER] --repo DIR        what runs and what is planned: one cluster, or the fleet
//	cairn diff [CLUSTER] --repo DIR          the rendered objects against the live ones (server-side dry run)
//	cairn check --repo DIR                   check a spec change in CI, and report on its pull request
//	cairn policy test --repo DIR             show what the policies decide on every planned step
//	cairn observe --repo DIR --kubeconfig F  write the observed state in the format --live reads
//	cairn propose --repo URL|DIR             publish each cluster's next step as a branch and a pull request
//	cairn reconcile --repo URL|DIR           run the loop: propose each next step once the last one shows done
//	cairn pr list --repo URL|DIR             list the pull requests the local provider keeps
//	cairn pr show BRANCH --repo URL|DIR      show one of them: title, state, labels, status, body
//	cairn backup list CLUSTER --location URL list a cluster's complete backups
//	cairn backup run CLUSTER                 ask a cluster's runtime for a backup now, and wait for it
//	cairn restore --location URL ...         restore a backup into a new data directory and verify it
//	cairn runtime --kind KIND --cluster NAME run the in-cluster runtime of one cluster
//	cairn instance install|<kind> ...        run inside a database pod: prepare the member, run the database
//	cairn version                            the release, commit and Go toolchain of the binary
//
// docs/cli.md has the rules every command follows: exit codes, -o, how
// the Kubernetes cluster is found, signals.
//
// This is the only package that wires the others together: the kinds
// table (kinds.go) gives every layer its per-kind parts, and the reconcile
// loop (package reconcile) gets the planner, renderer, live state and gates
// from here.
package main
