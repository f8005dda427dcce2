package contract

// Network access to a cluster's members: the NetworkPolicy cairn renders
// and the label clients carry to pass it.

// KeyNetwork, in the ConfigMap <cluster>-cairn, says whether the
// cluster's NetworkPolicy is rendered: NetworkRestricted, or NetworkOpen
// (the key missing, as in clusters rendered before the policy). A
// cluster moves from open to restricted by a reviewed step.
const KeyNetwork = "network"

// Values of KeyNetwork.
const (
	// NetworkOpen: no NetworkPolicy; any pod that can reach a member may
	// connect.
	NetworkOpen = "open"
	// NetworkRestricted: the members admit connections only from each
	// other, the cluster's runtime and pods carrying ClientLabel.
	NetworkRestricted = "restricted"
)

// NetworkModes are the modes in the order a cluster moves through them.
var NetworkModes = []string{NetworkOpen, NetworkRestricted}

// NetworkMode reads a KeyNetwork value; "" (no key) is NetworkOpen. ok
// is false for any other value.
func NetworkMode(v string) (mode string, ok bool) {
	switch v {
	case "", NetworkOpen:
		return NetworkOpen, true
	case NetworkRestricted:
		return v, true
	}
	return "", false
}

// NetworkPolicy names the cluster's NetworkPolicy, which selects its
// members' pods.
func NetworkPolicy(cluster string) string { return cluster + "-members" }

// ClientLabelPrefix starts the label key a client pod carries to reach a
// cluster's members: ClientLabel(cluster), with ClientLabelValue. A key
// per cluster lets one pod be a client of several; the prefix is not
// LabelPrefix, so a cluster's name never meets cairn's own keys.
const ClientLabelPrefix = "access.cairn.dev/"

// ClientLabel is the label key that admits a pod of the cluster's
// namespace to its members (value ClientLabelValue).
func ClientLabel(cluster string) string { return ClientLabelPrefix + cluster }

// ClientLabelValue is ClientLabel's value.
const ClientLabelValue = "true"
