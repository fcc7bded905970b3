package cli

// restartArgs are the arguments to start again with: the same, less the
// readiness pipe of start --background, which belonged to the first run.
func restartArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--"+notifyFDFlag || a == "-"+notifyFDFlag:
			i++ // and its value
		case len(a) > len(notifyFDFlag)+3 && (a[:len(notifyFDFlag)+3] == "--"+notifyFDFlag+"="):
		default:
			out = append(out, a)
		}
	}
	return out
}
