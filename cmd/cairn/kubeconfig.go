package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeTarget is the Kubernetes cluster a command talks to.
type kubeTarget struct {
	Config *rest.Config
	// Namespace is the namespace of the kubeconfig's context, or the
	// pod's in a cluster; "default" when neither names one.
	Namespace string
	// Source says where the config came from, for messages.
	Source string
}

// errNoCluster: nothing names a cluster to talk to.
var errNoCluster = errors.New("no Kubernetes cluster to talk to: give --kubeconfig or --in-cluster (or set $KUBECONFIG, or write ~/.kube/config)")

// resolveKube finds the cluster every command that talks to one uses, as
// kubectl does: --kubeconfig (path), then $KUBECONFIG (a list of files,
// merged), then ~/.kube/config, then the ServiceAccount of the pod cairn
// runs in. --in-cluster (inCluster) skips the files; --context picks a
// context of the kubeconfig.
//
// Exit codes: flags that conflict, a --context the kubeconfig does not
// have, or nothing to talk to at all are usage errors (2); a kubeconfig file that cannot be read or
// parsed is invalid input (1), as an unreadable --live file is.
func resolveKube(path, context string, inCluster bool) (*kubeTarget, error) {
	switch {
	case path != "" && inCluster:
		return nil, &exitError{exitUsage, fmt.Errorf("--kubeconfig and --in-cluster name two clusters; give one")}
	case inCluster && context != "":
		return nil, &exitError{exitUsage, fmt.Errorf("--context picks a kubeconfig context; --in-cluster has none")}
	case inCluster:
		return inClusterTarget("--in-cluster")
	}
	rules, source := kubeconfigFiles(path)
	if rules == nil {
		if context != "" {
			return nil, &exitError{exitUsage, fmt.Errorf("--context %s: no kubeconfig to pick it from: %w", context, errNoCluster)}
		}
		if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
			return nil, &exitError{exitUsage, errNoCluster}
		}
		return inClusterTarget("the pod's ServiceAccount")
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, &exitError{exitInvalid, fmt.Errorf("%s: %w", source, err)}
	}
	if _, ok := raw.Contexts[context]; context != "" && !ok {
		return nil, &exitError{exitUsage, fmt.Errorf("%s: --context: context %q does not exist", source, context)}
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, kubeconfigError(source, err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, kubeconfigError(source, err)
	}
	return &kubeTarget{Config: cfg, Namespace: ns, Source: source}, nil
}

// kubeconfigFiles are the loading rules of the first of --kubeconfig,
// $KUBECONFIG and ~/.kube/config that is set (or exists), and how to name
// it; nil when none is.
func kubeconfigFiles(path string) (*clientcmd.ClientConfigLoadingRules, string) {
	if path != "" {
		return &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, "kubeconfig " + path
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		files := filepath.SplitList(env)
		for _, f := range files {
			if _, err := os.Stat(f); err == nil {
				return &clientcmd.ClientConfigLoadingRules{Precedence: files}, "$KUBECONFIG (" + env + ")"
			}
		}
		// kubectl reads nothing else when $KUBECONFIG is set: say so
		// rather than fall back to another cluster.
		return &clientcmd.ClientConfigLoadingRules{ExplicitPath: files[0]}, "$KUBECONFIG (" + env + ")"
	}
	if home, err := os.UserHomeDir(); err == nil {
		f := filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
		if _, err := os.Stat(f); err == nil {
			return &clientcmd.ClientConfigLoadingRules{ExplicitPath: f}, "kubeconfig " + f
		}
	}
	return nil, ""
}

func inClusterTarget(source string) (*kubeTarget, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, &exitError{exitUsage, fmt.Errorf("%s: %w", source, err)}
	}
	return &kubeTarget{Config: cfg, Namespace: podNamespace(), Source: source}, nil
}

// kubeconfigError is a kubeconfig that does not make a client config
// (no current context, a context naming no cluster): invalid input.
func kubeconfigError(source string, err error) error {
	return &exitError{exitInvalid, fmt.Errorf("%s: %w", source, err)}
}
