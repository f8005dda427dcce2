package main

import (
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/agent/etcd"
)

// etcdRuntime is the etcd row's part of `cairn runtime`: it has no flags
// of its own; its keeper dials the cluster's client Service.
type etcdRuntime struct{ cfg etcd.Config }

func newEtcdRuntime() kindRuntime { return &etcdRuntime{} }

func (r *etcdRuntime) addFlags(*pflag.FlagSet) {}

func (r *etcdRuntime) keeper(client kubernetes.Interface, cfg agent.Config) (agent.Keeper, error) {
	return r.cfg.Keeper(client, cfg)
}
