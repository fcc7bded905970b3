module github.com/edge-agent/edge-agent/e2e

go 1.26
