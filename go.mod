module github.com/glancelab/attention

go 1.26.8

require golang.org/x/sys v0.50.0
