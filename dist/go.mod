module github.com/edge-agent/edge-agent/dist

go 1.26
