# CoNLL-2000 chunking patterns for `suffixlm crf` (Wapiti / CRF++ syntax).
# Input columns: 0 = word, 1 = part of speech; the chunk tag is the last column.
# %x[off,col]: row offset first, then column. Out-of-sentence rows read as
# Wapiti's padding values _x-1, _x-2, _x+1, _x+2.

# words in a +-2 window
u:w-2=%x[-2,0]
u:w-1=%x[-1,0]
u:w0=%x[0,0]
u:w+1=%x[1,0]
u:w+2=%x[2,0]
# word bigrams around the current word
u:w-1,w0=%x[-1,0]|%x[0,0]
u:w0,w+1=%x[0,0]|%x[1,0]

# parts of speech in a +-2 window
u:p-2=%x[-2,1]
u:p-1=%x[-1,1]
u:p0=%x[0,1]
u:p+1=%x[1,1]
u:p+2=%x[2,1]
# part-of-speech bigrams in the window
u:p-2,p-1=%x[-2,1]|%x[-1,1]
u:p-1,p0=%x[-1,1]|%x[0,1]
u:p0,p+1=%x[0,1]|%x[1,1]
u:p+1,p+2=%x[1,1]|%x[2,1]
# part-of-speech trigrams in the window
u:p-2..p0=%x[-2,1]|%x[-1,1]|%x[0,1]
u:p-1..p+1=%x[-1,1]|%x[0,1]|%x[1,1]
u:p0..p+2=%x[0,1]|%x[1,1]|%x[2,1]

# label bigrams (pure transitions y', y)
B
