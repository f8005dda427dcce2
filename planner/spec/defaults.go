package spec

// Defaults applied to fields left out.
const (
	DefaultEtcdStorage Quantity = "8Gi"
	DefaultTimeZone             = "UTC"
)

func (c *EtcdCluster) setDefaults() {
	if c.Spec.Storage == "" {
		c.Spec.Storage = DefaultEtcdStorage
	}
	defaultBackup(c.Spec.Backup)
	defaultWindow(c.Spec.MaintenanceWindow)
}

func (c *PostgresCluster) setDefaults() {
	defaultBackup(c.Spec.Backup)
	defaultWindow(c.Spec.MaintenanceWindow)
}

func defaultBackup(b *Backup) {
	if b != nil && b.TimeZone == "" {
		b.TimeZone = DefaultTimeZone
	}
}

func defaultWindow(w *MaintenanceWindow) {
	if w != nil && w.TimeZone == "" {
		w.TimeZone = DefaultTimeZone
	}
}
