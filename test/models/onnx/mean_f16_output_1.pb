
JVyU9Uõ«6