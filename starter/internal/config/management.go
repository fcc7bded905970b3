package config

import "strings"

// headersKey and headersFileKey are management.opamp's header keys.
const (
	headersKey     = "management.opamp.headers"
	headersFileKey = "management.opamp.headers-file"
)

// readHeaderFiles reads management.opamp.headers-file into the headers,
// as token-file is read into output.token: the file wins over an inline
// value of the same header.
func (d *decoder) readHeaderFiles(cfg *Config, readFile func(string) ([]byte, error)) {
	o := &cfg.Management.OpAMP
	if len(o.HeadersFile) == 0 {
		return
	}
	if o.Headers == nil {
		o.Headers = map[string]string{}
	}
	for name, path := range o.HeadersFile {
		if _, both := o.Headers[name]; both {
			d.warn(headersKey+"."+name, "%s.%s is ignored: %s.%s is set", headersKey, name, headersFileKey, name)
		}
		if strings.TrimSpace(path) == "" {
			d.failf(headersFileKey+"."+name, "is empty: name the file that holds the header's value")
			continue
		}
		o.Headers[name] = d.readSecret(headersFileKey+"."+name, path, readFile)
	}
}
