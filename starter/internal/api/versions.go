package api

// Versions is the self-upgrade part of the status
// (management.opamp.packages): the version running, the one kept for a
// rollback, a trial under way and how the last offer ended.
type Versions struct {
	Running  string `json:"running"`
	Previous string `json:"previous,omitempty"`
	Trial    string `json:"trial,omitempty"`
	// LastOffer is "VERSION installed" or "VERSION failed: why".
	LastOffer string `json:"last_offer,omitempty"`
}
