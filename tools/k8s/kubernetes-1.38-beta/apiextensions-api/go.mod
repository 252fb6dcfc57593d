module k8s.io/apiextensions-api

go 1.26.0
