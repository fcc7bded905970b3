module github.com/edge-agent/edge-agent/bench

go 1.26.0

require (
	github.com/edge-agent/edge-agent/transport v0.0.0
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/klauspost/compress v1.20.4 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/edge-agent/edge-agent/transport => ../transport
