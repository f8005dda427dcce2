package spec

// Defaults applied to fields left out.
const (
	DefaultTimeZone = "UTC"
)

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
