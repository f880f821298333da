package spec

// Vocabulary is the set of words a string field of a contract takes: the
// field (as "<Type>.<json name>", every field it names), its words with
// what each means, and, when the set is not closed, the rule that says what
// a backend may do with other words. docs/protocol.md lists every
// contract's vocabularies from here.
type Vocabulary struct {
	// Name names the vocabulary (its Go type, or what the words are).
	Name string
	// Fields are where the words travel: "<Type>.<json name>", or
	// "<op>.<json name>" for an operation's argument.
	Fields []string
	// Words are the contract's words, in the order the page shows.
	Words []Word
	// Open, when not "", is the ID of the rule of the contract's table that
	// says what happens to another word (the page shows whether the seed is
	// silent on it). "" (and not Free) means the set is closed: the kit
	// sends, and expects, only these words.
	Open string
	// Free: the store keeps any word as given; Words are the ones it
	// reads (and Open is "").
	Free bool
	// Note, when not "", is said of the vocabulary as a whole.
	Note string
}

// Word is one word of a Vocabulary.
type Word struct {
	Word  string
	Means string
}
