// Package readme proves that the README's psql walkthrough works when
// pasted: it takes the SQL blocks of the "Five minutes with psql" section
// and feeds them, unchanged, to the real psql client connected to a
// started fvsql server, and fails on any error.
package readme
