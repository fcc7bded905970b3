module github.com/edge-agent/edge-agent/starter

go 1.26.0

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/lmittmann/tint v1.2.1 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/urfave/cli/v2 v2.27.7 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.29.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

require (
	github.com/edge-agent/edge-agent/connector v0.0.0
	github.com/edge-agent/edge-agent/transport v0.0.0
)

replace (
	github.com/edge-agent/edge-agent/connector => ../connector
	github.com/edge-agent/edge-agent/transport => ../transport
)
