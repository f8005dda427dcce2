package main

// kindStatus is what `cairn status` shows of a kind beyond what every
// kind shares; a kind with the zero kindStatus shows nothing more.
type kindStatus struct {
	// lags reads the members' lag classes from the data of the runtime's
	// status ConfigMap, by member; nil: the kind reports no lag.
	lags func(status map[string]string) (map[string]string, error)
	// archive is the line (ending in a newline) on the cluster's log
	// archive, given its backup policy (nil: none); nil: no such line.
	archive func(bk *backupView) string
}
