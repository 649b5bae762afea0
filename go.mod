module github.com/aegisrelay/aegis

go 1.26.8

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
