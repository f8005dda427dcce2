package main

import (
	"fmt"

	"github.com/cairn-dev/cairn/planner/contract"
)

// postgresStatus shows a PostgreSQL cluster's replicas' lag and its WAL
// archive.
var postgresStatus = kindStatus{lags: postgresLags, archive: postgresArchive}

func postgresLags(status map[string]string) (map[string]string, error) {
	members, err := contract.PostgresMembers(status[contract.StatusKeyPostgres])
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range members {
		if m.Lag != "" {
			out[m.Name] = m.Lag
		}
	}
	return out, nil
}

func postgresArchive(bk *backupView) string {
	switch {
	case bk != nil && bk.WALArchive:
		return fmt.Sprintf("WAL archive: every segment to %s (restoreFrom.targetTime restores to a point in time; the runtime's WALArchiveFailing Events and cairn_postgres_wal_* metrics say how it goes)\n", bk.StorageLocation)
	case bk != nil:
		return "WAL archive: not yet (the members restart with it in the steps that follow; a restore brings back a base backup's end)\n"
	}
	return "WAL archive: none (no backup policy: a restore brings back a base backup's end)\n"
}
