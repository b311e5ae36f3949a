# Sha & Pereira (2003), Table 1: the features of their second-order chunker.
# Input columns: 0 = word, 1 = part of speech; the chunk tag is the last column.
#
# Train with `suffixlm crf train --order 2 -p sha-pereira.pat` (or CRF(order=2)): the label
# at position i is the pair of chunk tags y = (c(i-1), c(i)).
#   '*' conjoins each predicate p(x, i) with the label pair y (its 'b' part) and with the
#       current chunk tag c(y) alone (its 'u' part: the back-off from sparse pairs);
#   'T' conjoins the predicate 'true' with the transition y(i-1) -> y(i), the tag triple.
# Pairs never seen in training are impossible (forbid='unseen', the default at order 2):
# Sha & Pereira's "OI is impossible".

# p(x, i) = true: the label pair and the chunk tag alone
*:true
# words in a +-2 window
*:w-2=%x[-2,0]
*:w-1=%x[-1,0]
*:w0=%x[0,0]
*:w+1=%x[1,0]
*:w+2=%x[2,0]
# word bigrams around the current word
*:w-1,w0=%x[-1,0]|%x[0,0]
*:w0,w+1=%x[0,0]|%x[1,0]
# parts of speech in a +-2 window
*:t-2=%x[-2,1]
*:t-1=%x[-1,1]
*:t0=%x[0,1]
*:t+1=%x[1,1]
*:t+2=%x[2,1]
# part-of-speech bigrams in the window
*:t-2,t-1=%x[-2,1]|%x[-1,1]
*:t-1,t0=%x[-1,1]|%x[0,1]
*:t0,t+1=%x[0,1]|%x[1,1]
*:t+1,t+2=%x[1,1]|%x[2,1]
# part-of-speech trigrams in the window
*:t-2..t0=%x[-2,1]|%x[-1,1]|%x[0,1]
*:t-1..t+1=%x[-1,1]|%x[0,1]|%x[1,1]
*:t0..t+2=%x[0,1]|%x[1,1]|%x[2,1]

# the transition between label pairs (the chunk-tag triple c(i-2) c(i-1) c(i))
T
