module github.com/aegisrelay/aegis

go 1.26.8

require (
	github.com/valyala/fastjson v1.6.10
	golang.org/x/sys v0.50.0
)
