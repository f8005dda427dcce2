package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// act makes decide's change and reports whether the membership or the
// leadership changed. etcd's own refusals that mean "not now" (a learner
// still catching up, a cluster etcd finds unhealthy, a leader that just
// changed) are waits: logged, not errors, and decided again next pass.
func (m *Membership) act(ctx context.Context, cli *clientv3.Client, seen etcdLook, a action) (bool, error) {
	log := m.logger().With("member", a.Member.Name, "action", a.Kind.String())
	if a.Kind == actNone {
		if a.Why != "" {
			log.Info("membership waits", "reason", a.Why)
		}
		return false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	var err error
	switch a.Kind {
	case actPromote:
		err = m.withOthers(cctx, cli, seen, a.Member.ID, func(c *clientv3.Client) error {
			_, err := c.MemberPromote(cctx, a.Member.ID)
			return err
		})
	case actRemove:
		err = m.withOthers(cctx, cli, seen, a.Member.ID, func(c *clientv3.Client) error {
			_, err := c.MemberRemove(cctx, a.Member.ID)
			return err
		})
		if errors.Is(rpctypes.Error(err), rpctypes.ErrMemberNotFound) {
			return true, nil // someone else removed it: gone all the same
		}
	case actMoveLeader:
		err = m.moveLeader(cctx, seen, a.Member.ID, a.To.ID)
	}
	switch {
	case err == nil:
		log.Info("membership changed", "reason", a.Why, "to", a.To.Name)
		return true, nil
	case isWait(err):
		log.Info("etcd refuses the change for now", "reason", a.Why, "err", err.Error())
		return false, nil
	}
	return false, fmt.Errorf("%s %s: %w", a.Kind, a.Member.Name, err)
}

// withOthers calls fn with a client of the answering members other than
// id: a member being removed that serves its own removal stops before it
// answers, and a learner serves no membership calls.
func (m *Membership) withOthers(ctx context.Context, cli *clientv3.Client, seen etcdLook, id uint64, fn func(*clientv3.Client) error) error {
	var eps []string
	for _, o := range seen.members {
		if o.id != id && o.answered && !o.learner && len(o.clientURLs) > 0 {
			eps = append(eps, o.clientURLs[0])
		}
	}
	if len(eps) == 0 {
		return fn(cli)
	}
	others, err := m.dial(ctx, eps)
	if err != nil {
		return err
	}
	defer others.Close()
	return fn(others)
}

// moveLeader asks the leader itself, at its client URL, to hand
// leadership to member to.
func (m *Membership) moveLeader(ctx context.Context, seen etcdLook, leader, to uint64) error {
	i := slices.IndexFunc(seen.members, func(o lookedMember) bool { return o.id == leader })
	if i < 0 || len(seen.members[i].clientURLs) == 0 {
		return rpctypes.ErrNotLeader
	}
	cli, err := m.dial(ctx, seen.members[i].clientURLs)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.MoveLeader(ctx, to)
	return err
}

// waits are etcd's refusals that a later pass may not meet.
var waits = []error{
	rpctypes.ErrMemberLearnerNotReady, rpctypes.ErrUnhealthy, rpctypes.ErrNotLeader,
	rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader, rpctypes.ErrTimeoutDueToLeaderFail,
	rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTooManyLearners, rpctypes.ErrTimeout,
}

func isWait(err error) bool {
	e := rpctypes.Error(err)
	return slices.ContainsFunc(waits, func(w error) bool { return errors.Is(e, w) })
}
