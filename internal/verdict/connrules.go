package verdict

// Rules about which connection carried a case's work. The rig attributes a
// connection to the case whose address accepted it (the cutter's preamble),
// so a tool that keeps connections between cases (a pool, a cached client,
// OpenSSH's ControlMaster) shows up in the evidence of the wrong case.
const (
	// RuleForeignRequest: a command marked with another case's correlation
	// id arrived over one of this case's connections.
	RuleForeignRequest = "foreign_request"
	// RuleNoConnection: a case with no cut, whose address the tool never
	// connected to, got a result that claims a request was sent.
	RuleNoConnection = "no_connection"
)
