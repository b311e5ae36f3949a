# Named-entity recognition patterns for `suffixlm crf` (Wapiti / CRF++ syntax),
# written for CoNLL-2002 (Dutch and Spanish): columns 0 = word, 1 = part of
# speech; the IOB2 entity tag is the last column.
# %x[off,col] value at row t+off; %t[off,col,"re"] true/false: does re match;
# %m[off,col,"re"] the substring re matches (empty if none); "re" in Wapiti's
# regex dialect (crf/patterns.py: . ^ $ * ? and the classes \u upper, \l lower,
# \d digit, \a letter, \w letter or digit, \p punctuation, \s space, upper-cased
# for the complement; * takes as few as it can). %X and %M lower-case the value
# they give. Out-of-sentence rows read as Wapiti's padding values _x-1, _x-2,
# _x+1, _x+2.

# lower-cased words in a +-2 window
u:w-2=%X[-2,0]
u:w-1=%X[-1,0]
u:w0=%X[0,0]
u:w+1=%X[1,0]
u:w+2=%X[2,0]
# lower-cased word bigrams around the current word
u:w-1,w0=%X[-1,0]|%X[0,0]
u:w0,w+1=%X[0,0]|%X[1,0]

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

# prefixes and suffixes of length 1-4 of the lower-cased current word
# (empty for a shorter word)
u:pre1=%M[0,0,"^."]
u:pre2=%M[0,0,"^.."]
u:pre3=%M[0,0,"^..."]
u:pre4=%M[0,0,"^...."]
u:suf1=%M[0,0,".$"]
u:suf2=%M[0,0,"..$"]
u:suf3=%M[0,0,"...$"]
u:suf4=%M[0,0,"....$"]

# word shape (\u: an upper-case letter, Latin-1 capitals included; \d: a digit;
# \W: neither letter nor digit)
u:cap0=%t[0,0,"^\u"]
u:cap-1=%t[-1,0,"^\u"]
u:cap+1=%t[1,0,"^\u"]
u:allcap=%t[0,0,"^\u\u*$"]
u:innercap=%t[0,0,".\u"]
u:digit=%t[0,0,"\d"]
u:alldigit=%t[0,0,"^\d\d*$"]
u:hyphen=%t[0,0,"-"]
u:punct=%t[0,0,"^\W\W*$"]
# previous word with the current capitalisation (w-1 = _x-1: sentence-initial capital)
u:w-1,cap0=%X[-1,0]|%t[0,0,"^\u"]

# label bigrams (pure transitions y', y)
B
