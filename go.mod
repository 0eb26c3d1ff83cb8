module github.com/consultmcp/consult

go 1.26.8
