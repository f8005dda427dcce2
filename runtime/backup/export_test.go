package backup

import "testing"

// StoresForTest gives the external tests (which start PostgreSQL through
// the instance manager, itself an importer of this package) the stores
// every behaviour is checked on.
func StoresForTest(t *testing.T) map[string]Store { return stores(t) }
