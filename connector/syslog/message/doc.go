// Package message parses one syslog message (RFC 5424, RFC 3164, or
// either) into its fields, for the syslog input and for processors that
// parse syslog lines read by other inputs. It knows nothing of inputs.
package message
