package cuda

//go:generate go run ./internal/genresults -in results.txt -out zresult.go
