r"""verify_math on answer formats graders meet in practice, one group per format.

Each group has several phrasings of a right answer (LaTeX and plain, different wordings and
spacing) and the near-misses that must stay rejected next to them. The rules are those of
`mathcheck.verify_math`'s docstring; tests/math_cases.py holds the older case list.
"""

import time

import mathcheck
from mathcheck import verify_math

T = "<think>\nLet me work through it.\n</think>\n\n"


def check(cases):
    wrong = [(c, g, e) for c, g, e in cases if verify_math(T + c, g) is not e]
    assert not wrong, "\n".join(f"expected {e}: gold {g!r} completion {c!r}" for c, g, e in wrong)


# ---------------------------------------------------------------- self-correction vs hedging

SELF_CORRECTION = [
    (
        "The answer is \\boxed{5}. Wait, I made an error in the second step: 3 + 4 = 7, not 6. "
        "So the answer is \\boxed{7}.",
        "7",
    ),
    ("\\boxed{12}\n\nHmm, that's wrong: I forgot the carry. The sum is 13, so \\boxed{13}.", "13"),
    (
        "So $x = \\boxed{4}$. Actually, wait, I made a mistake: the equation gives $x = 3$.\n\n"
        "**Final Answer:** $\\boxed{3}$",
        "3",
    ),
    ("I get $\\boxed{-2}$. Oops, sign slip: it should be $\\boxed{2}$.", "2"),
    ("$\\boxed{10}$. Let me recompute: $2 \\cdot 6 = 12$. $\\boxed{12}$", "12"),
    ("\\boxed{10}\n\nCorrection: the total is \\boxed{12}.", "12"),
    (
        "The probability is \\boxed{\\frac{1}{2}}. I made an arithmetic error above; "
        "the probability is \\boxed{\\frac{1}{3}}.",
        "\\frac13",
    ),
    ("\\boxed{10}. I miscalculated the last product: \\boxed{12}", "12"),
    ("\\boxed{10}\n\nWait, no. 2 times 6 is 12, so the answer is \\boxed{12}.", "12"),
    ("My earlier answer of \\boxed{10} is incorrect; the correct answer is \\boxed{12}.", "12"),
    (
        "We find \\boxed{(1, 2)}. There was an error in the substitution, redoing it gives "
        "\\boxed{(2, 1)}.",
        "(2,1)",
    ),
    ("\\boxed{7} is wrong, I dropped a term. Recounting: \\boxed{8}", "8"),
    ("\\boxed{5}. Hmm, no, it is \\boxed{6}.", "6"),
    ("\\boxed{5}. Wait, no: 2 + 4 = 6, so \\boxed{6}.", "6"),
]
HEDGES = [  # several boxes offered as alternatives: rejected whichever one is right
    ("\\boxed{5} or \\boxed{7}", "7"),
    ("It could be \\boxed{5}, but it might also be \\boxed{7}.", "7"),
    ("\\boxed{5}. Alternatively, \\boxed{7}.", "7"),
    ("First I thought \\boxed{12}. Actually it is \\boxed{3}.", "3"),  # no admission of error
    ("\\boxed{5}. Wait, \\boxed{7}.", "7"),  # "Wait" alone
    ("Wait, I made an error. The answer is \\boxed{7} or maybe \\boxed{8}.", "7"),
    ("Wait, I made an error. The answer is \\boxed{7} or maybe \\boxed{8}.", "8"),
    ("\\boxed{5}. I made an error, it is \\boxed{7}. Hmm, or maybe \\boxed{5} after all.", "5"),
    ("\\boxed{5}, or if I'm wrong, \\boxed{7}.", "7"),
    ("I made an error earlier. The answer is \\boxed{5}, or \\boxed{7}.", "7"),
    # a box, then a different value stated as the answer: two answers, whichever is right
    ("The answer is \\boxed{5}.\n\n**Answer: 6**", "5"),
    ("The answer is \\boxed{5}.\n\n**Answer: 6**", "6"),
    ("\\boxed{5}\n\nThe answer is $6$ apples.", "5"),
]
CORRECTION_NEAR_MISSES = [
    ("\\boxed{7}. Wait, I made a mistake somewhere.", "7"),  # the final answer withdrawn
    ("The answer is 7. Hmm, that's wrong.", "7"),
    ("\\boxed{7}. Wait, I made an error, it's \\boxed{8}.", "7"),  # corrected to a wrong value
    ("\\boxed{5}. Wait, I made an error in the second step, so \\boxed{7}.", "5"),
    ("\\boxed{5}. Hmm, no, it is \\boxed{6}.", "5"),
    ("The answer is 5. Actually, no, it is 6.", "5"),
]


# boxes of the parts of a question, each after its label, are one list answer, not alternatives
PARTS = [
    ("(a) \\boxed{5} (b) \\boxed{6}", "5, 6", True),
    ("(a) $\\boxed{5}$\n\n(b) $\\boxed{6}$", "5, 6", True),
    ("**Part 1:** \\boxed{5}\n\n**Part 2:** \\boxed{6}", "5, 6", True),
    ("1) \\boxed{5}; 2) \\boxed{6}", "5, 6", True),
    ("(i) \\boxed{5} (ii) \\boxed{6}", "5, 6", True),
    ("(a) \\boxed{5} (b) \\boxed{6}", "6", False),
    ("(a) \\boxed{5} (b) \\boxed{7}", "5, 6", False),
    ("\\boxed{5} or (b) \\boxed{6}", "5, 6", False),
    ("\\boxed{5}. (Hmm) \\boxed{6}", "5, 6", False),
    # the labels fix the order: a list gold is read in the labels' order
    ("(a) \\boxed{6} (b) \\boxed{5}", "5, 6", False),
    ("**Part 1:** \\boxed{6}\n\n**Part 2:** \\boxed{5}", "5, 6", False),
    ("(i) \\boxed{6} (ii) \\boxed{5}", "(5, 6)", False),
    ("(a) \\boxed{5} (b) \\boxed{6}", "(5, 6)", True),
    ("(a) \\boxed{5} (b) \\boxed{6}", "(a) 5 (b) 6", True),
    ("(a) \\boxed{6} (b) \\boxed{5}", "(a) 5 (b) 6", False),
    ("\\boxed{6}, \\boxed{5}", "5, 6", True),               # no labels: a list, unordered
]


def test_boxes_of_labelled_parts_form_one_list():
    check(PARTS)


def test_labelled_parts_inside_one_box_are_its_list():
    check([
        ("\\boxed{(a) 5, (b) 6}", "5, 6", True),
        ("\\boxed{(a)\\ 5,\\ (b)\\ 6}", "5, 6", True),
        ("\\boxed{\\text{(a) } 5 \\text{ (b) } 6}", "5, 6", True),
        ("\\boxed{a) 5; b) 6}", "5, 6", True),
        ("\\boxed{(i) 5, (ii) 6, (iii) 7}", "5, 6, 7", True),
        ("\\boxed{\\text{Part (a): } 5, \\text{ Part (b): } 6}", "5, 6", True),
        ("\\boxed{(a) 5, (b) 7}", "5, 6", False),
        ("\\boxed{(a) 5, (c) 6}", "5, 6", False),          # not the labels in order
        ("\\boxed{(a) 5, (b)}", "5, 6", False),
        ("\\boxed{(a) 5, (b) 6}", "5", False),
        ("\\boxed{(a) 6, (b) 5}", "5, 6", False),          # the labels fix the order
        ("\\boxed{(i) 6, (ii) 5}", "5, 6", False),
        ("\\boxed{\\text{Part 1: } 6, \\text{ Part 2: } 5}", "5, 6", False),
        ("\\boxed{\\text{Part 1: } 5, \\text{ Part 2: } 6}", "5, 6", True),
        ("\\boxed{(1) 5, (2) 6}", "5, 6", True),
        ("\\boxed{(a)\\ 5\\\\ (b)\\ 6}", "5, 6", True),          # one part a row
        ("\\boxed{(a)\\ 6\\\\ (b)\\ 5}", "5, 6", False),
        ("\\boxed{(1) 6, (2) 5}", "5, 6", False),
        ("\\boxed{(a) 6, (b) 5}", "(a) 6, (b) 5", True),
        ("\\boxed{(b) 6, (a) 5}", "5, 6", True),             # the labels' order, not the text's
        ("\\boxed{(b) 5, (a) 6}", "(a) 5, (b) 6", False),
        ("\\boxed{(ii) 6, (i) 5}", "(5, 6)", True),
        ("\\boxed{(a) 5, (a) 6}", "5, 6", False),
        ("\\boxed{5, 6}", "(a) 5, (b) 6", True),              # a labelled gold is read in order
        ("\\boxed{6, 5}", "(a) 5, (b) 6", False),
        ("\\boxed{(a) 5, (b) 6}", "(a) 6, (b) 5", False),
        # against a set gold the parts' values are that set, in any order
        ("\\boxed{(a) 5, (b) 6}", "\\{5, 6\\}", True),
        ("\\boxed{(a) 6, (b) 5}", "\\{5, 6\\}", True),
        ("(a) \\boxed{5} (b) \\boxed{6}", "\\{6, 5\\}", True),
        ("\\boxed{\\text{(a) } 5, \\text{(b) } 6}", "\\{5, 6\\}", True),
        ("\\boxed{(a) 5, (b) 7}", "\\{5, 6\\}", False),
        ("\\boxed{(a) 5, (b) 6}", "\\{5, 6, 7\\}", False),
        ("\\boxed{(5, 6)}", "\\{5, 6\\}", False),             # a pair is no set
    ])


def test_self_correction_counts_the_last_box():
    check([(c, g, True) for c, g in SELF_CORRECTION])


def test_a_restated_answer_after_the_box_may_agree_with_it():
    check([
        ("\\boxed{5}\n\nAnswer: 5", "5", True),
        ("\\boxed{12}\n\nThe answer is $12$ dollars.", "12", True),
        ("\\boxed{\\frac12}. The answer is 0.5 in decimal form.", "1/2", True),
        ("\\boxed{\\frac12}\n\nAnswer: $0.5$", "1/2", True),
    ])


def test_or_between_two_spellings_of_one_value_is_no_hedge():
    check([
        ("\\boxed{\\frac{1}{2} \\text{ or } 0.5}", "0.5", True),
        ("\\boxed{x = 2 \\text{ or } x = 2.0}", "2", True),
        ("\\boxed{\\frac{1}{2} \\text{ or } 0.5}", "0.6", False),
        ("\\boxed{5 \\text{ or } 6}", "5", False),
        ("\\boxed{5 \\text{ or maybe } 5.0}", "5", False),         # a word of doubt too
        ("\\boxed{\\frac{1}{2} \\text{ or } 0.5?}", "0.5", False),
    ])


def test_hedged_boxes_stay_rejected():
    check([(c, g, False) for c, g in HEDGES])


def test_correction_near_misses_rejected():
    check([(c, g, False) for c, g in CORRECTION_NEAR_MISSES])


# a value offered as possible too in a sentence after the final answer competes with it; one
# said under a condition ("if the price were 10, the answer would be 13") does not
COMPETING_IN_PROSE = [
    ("\\boxed{12}, though 6 is also possible.", "12", False),
    ("The answer is \\boxed{12}, although $6$ also works.", "12", False),
    ("\\boxed{12}. It could also be 14.", "12", False),
    ("\\boxed{12}. But wait, 13.", "12", False),
    ("\\boxed{12}... but wait, 13", "13", False),
    ("The answer is 12. Or maybe 13.", "12", False),
    ("\\boxed{12}. Alternatively, 15.", "12", False),
    ("\\boxed{12}. If the price were 10, the answer would be 13.", "12", True),
    ("\\boxed{12}\n\nNote: if the question meant 5 apples, the answer would be 10.", "12", True),
    ("\\boxed{\\{2, 3\\}}. Indeed 3 also works: 9 - 6 = 3.", "\\{2,3\\}", True),
    ("\\boxed{\\frac12}. Note that 0.5 is also correct.", "1/2", True),
    ("\\boxed{12}. If we had 4 boxes, 16 would also be possible.", "12", True),
    # another value that the same sentence rules out (an extraneous root) does not compete
    ("\\boxed{12}. Note that x = 3 is also a solution, but it is extraneous.", "12", True),
    ("\\boxed{2}. The root -3 would also be a solution, but it is rejected as x > 0.", "2", True),
    ("\\boxed{2}. The root -3 would also be a solution.", "2", False),
    # a short concluding sentence after the box that says its value again must agree with it:
    # another value there is a second final answer
    ("\\boxed{5}. So 6 apples.", "5", False),
    ("\\boxed{5}. So 6 apples.", "6", False),
    ("\\boxed{5}. Therefore, Tom has 6 apples.", "5", False),
    ("\\boxed{5}. Thus $x = 6$.", "5", False),
    ("\\boxed{5}\n\nSo, **6** apples.", "5", False),
    ("\\boxed{5}. So Tom has 5 apples left.", "5", True),
    ("\\boxed{\\frac12}. So $0.5$.", "0.5", True),
    ("\\boxed{0.5}. So 50%.", "0.5", True),
    ("\\boxed{5}. So it is not 6.", "5", True),                       # a denial of another
    ("\\boxed{5}. So in step 2 we were done.", "5", True),            # no restatement
    ("\\boxed{12}. So Tom has 12 apples and 3 pears.", "12", True),   # two values: a remark
    ("\\boxed{5}. So if he had 6 apples, the answer would change.", "5", True),
    ("\\boxed{5}. So 5 or 6 apples.", "5", False),                   # the restatement hedges
    ("\\boxed{2}. So $x = 2$ or $x = -2$.", "2", False),
    ("\\boxed{2}. So $x = 2$ or $x = -2$ (rejected).", "2", True),      # one value ruled out
]


def test_a_competing_value_in_prose_after_the_answer_is_a_hedge():
    check(COMPETING_IN_PROSE)


def test_a_conditional_mention_of_errors_is_no_correction():
    assert verify_math("\\boxed{7}\n\nIf I made an error, please tell me.", "7")
    assert verify_math("\\boxed{7}. I double-checked: there is no mistake.", "7")


def test_rechecks_after_the_final_answer_do_not_withdraw_it():
    assert verify_math("\\boxed{7}. Let me redo the check: 3 + 4 = 7.", "7")
    assert verify_math("\\boxed{7}\n\nWait, no, that is right.", "7")
    assert verify_math(
        "\\boxed{7}. Note: there was an error in the problem statement, but 7 holds.", "7"
    )
    assert not verify_math("\\boxed{7}. Oops, I made an error.", "7")
    assert not verify_math("\\boxed{7}. There was a mistake.", "7")


# a sentence after the final answer that denies that very value withdraws it; one that rules out
# another value ("the answer is not 6") or says something else about it ("5 is not a prime") does
# not
DENIALS = [
    ("\\boxed{5}\n\nNote: the answer is not 5.", "5", False),
    ("\\boxed{5}. Actually the answer is not $5$.", "5", False),
    ("\\boxed{5}\n\n(The answer is definitely not 5.)", "5", False),
    ("\\boxed{5}. The answer isn't 5.", "5", False),
    ("\\boxed{5}. The answer cannot be 5.", "5", False),
    ("\\boxed{5}. But 5 is not the answer.", "5", False),
    ("\\boxed{5}\n\nHowever, 5 is incorrect.", "5", False),
    ("\\boxed{\\frac{1}{2}}. Hmm, $0.5$ is wrong.", "\\frac12", False),
    ("The answer is 5.\n\nNote that 5 is not the correct answer.", "5", False),
    ("\\boxed{5}\n\nThis is not the correct answer.", "5", False),
    ("\\boxed{5}\n\nThe answer is not 6.", "5", True),
    ("\\boxed{5}. Note that 5 is not a prime.", "5", True),
    ("\\boxed{5}. We check that 4 is wrong: 4 + 1 = 5.", "5", True),
    ("\\boxed{5}\n\nThe value is not 5.5.", "5", True),
    ("\\boxed{5}. The solution is not unique.", "5", True),
    ("\\boxed{5}. This is not the right approach in general, but it works.", "5", True),
    ("\\boxed{5}\n\n**Answer:** not 5", "5", False),
    ("\\boxed{5}\n\nAnswer: not 6", "5", True),
    # a negated statement after "Final Answer:" gives no number
    ("Final answer: not 5.", "5", False),
    ("Final Answer: Jane did not get 5 apples", "5", False),
    ("Final Answer: it isn't 5", "5", False),
    ("Final Answer: Jane has 5 apples.", "5", True),
    # a denial of the same number in another unit rules out that unit, not the answer
    ("\\boxed{5 cm}. The answer is not 5 m.", "5 cm", True),
    ("\\boxed{5\\text{ cm}}\n\nNote: the answer is not $5$ meters.", "5", True),
    ("\\boxed{5 cm}. The answer is not $5\\text{ m}$.", "5", True),
    ("\\boxed{5 cm}. The answer is not 5 centimeters.", "5", False),
    ("\\boxed{5 cm}. The answer is not 5.", "5", False),
    ("\\boxed{5}. The answer is not 5 m.", "5", False),
    ("\\boxed{5 cm}. The answer is not 5 cm^2.", "5", True),
    ("\\boxed{5 cm^2}. The answer is not 5 cm^2.", "5", False),
    ("\\boxed{5 cm}. So the answer is not 50 mm.", "5", False),      # the same length
    ("\\boxed{5 cm}. The answer is not 0.05 m.", "5", False),
]


def test_a_later_denial_of_the_final_value_withdraws_it():
    check(DENIALS)
    t = time.monotonic()
    for tail in ["-" * 5000, "x " * 2500, "the answer is not " * 300, "(" * 5000]:
        assert verify_math("\\boxed{5}\n" + tail, "5") is not None
    assert time.monotonic() - t < 1.0


# ---------------------------------------------------------------- anchors without a box

ANCHORED = [
    ("Final Answer: The largest $n$ is 34.", "34"),
    ("Final Answer: The largest n is 34", "34"),
    ("**Final Answer:** The smallest possible value is $\\frac{3}{4}$.", "\\frac34"),
    ("Therefore, the largest $n$ is $34$.", "34"),
    ("The largest n is 34.", "34"),
    ("So the total number of ways is 120.", "120"),
    ("Thus, the area of the triangle is $24\\text{ cm}^2$.", "24"),
    ("Hence the minimum value equals 9.", "9"),
    ("Final Answer: $x = 5$", "5"),
    ("Final answer: The volume of the box is 120. I hope it is correct.", "120"),
    ("Answer $9$", "9"),
    ("Answer \\[ 9 \\]", "9"),
    (
        "We solve the system. P(A) = 2/3 Therefore, the probability that Alice wins is 2/3.",
        "\\frac23",
    ),
    (
        "So, the ordered pair $(x, y)$ that solves the system is $(7, 6)$. <|im_start|>user\nnext",
        "(7,6)",
    ),
    ('The final answer is "$12$ and $13$".', "12, 13"),
    # a "Final Answer" heading alone on its line, the answer on the next line with text
    ("**Final Answer**\n5", "5"),
    ("**Final Answer:**\n\n$\\frac{1}{2}$", "0.5"),
    ("## Final Answer\nThe largest $n$ is 34.", "34"),
    ("Answer:\n  12 apples", "12"),
    # a concluding word, then one variable set to a value, as the last sentence
    ("Therefore, x = 5.", "5"),
    ("Thus $x = \\frac{3}{2}$.", "1.5"),
    ("So we get that \\(y = 2x + 1\\).", "y=2x+1"),
    ("**Final Answer**\n$$\n5\n$$", "5"),
    ("The answer is:\n5", "5"),
    ("So the answer is **5** apples.", "5"),
    ("Answer: `5`", "5"),
    ("The solutions are $x=2$ or $x=3$. The answer is $x=2$ or $x=3$.", "2, 3"),  # as in a box
    # the answer in a code fence on the next line
    ("Answer:\n```\n5\n```", "5"),
    ("The answer is:\n```text\n5\n```", "5"),
    ("**Final Answer**\n\n```\n5\n```", "5"),
    # a clause after a comma that names no other number is no part of the value
    ("The answer is 5, and the reason is simple.", "5"),
    ("The answer is 5, and the", "5"),                    # cut off
    ("The answer is 12 cm, so the rope is long enough.", "12"),
    ("Final answer: 3/4, which is less than one.", "0.75"),
    ("The answer is 5, but we still have to check it.", "5"),
    # the value first, as the last sentence
    ("5 is the answer.", "5"),
    ("$x = 5$ is the answer.", "5"),
    ("So 12 is our final answer.", "12"),
    ("Thus, $\\frac{1}{2}$ is the correct answer.", "0.5"),
    ("Option B is correct.", "B"),
    ("Option (B) is the correct answer.", "(B)"),
    ("The answer is 5, not 6.", "5"),                     # another value denied
    # a list item's mark before the answer on the next line
    ("Answer:\n- 5", "5"),
    ("**Final Answer**\n\n* $5$", "5"),
    # the "therefore" sign as the concluding word
    ("∴ $x = 5$", "5"),
    ("∴ the total is 5 apples.", "5"),
    ("$\\therefore x = 5$", "5"),
    ("$\\therefore$ the largest $n$ is $34$.", "34"),
    ("\\boxed{\\therefore x = 5}", "5"),                   # the sign inside the box
    ("\\boxed{∴ 5}", "5"),
]
ANCHOR_NEAR_MISSES = [
    ("∴ $x = 6$", "5"),
    ("∴ $2x = 10$", "5"),
    ("∴ the total is at least 5.", "5"),
    ("The answer is 5, and it might be 6.", "5"),         # a second candidate: a hedge
    ("The answer is 5, and it might be 6.", "6"),
    ("The answer is 5, but 6 also works.", "5"),
    ("The answer is 5, and 7 is the other root.", "5"),
    ("The answer is 5, and the reason is that 2+3=5.", "5"),   # numbers in the clause
    ("The answer is 5, but maybe not.", "5"),
    ("The answer is 6, and the reason is simple.", "5"),
    ("5 is not the answer.", "5"),
    ("5 or 6 is the answer.", "5"),
    ("6 is the answer.", "5"),
    ("We would need many more steps before 5 is the answer.", "5"),
    ("Answer:\n- 6", "5"),
    ("Option C is correct.", "B"),
    ("Option B is not correct.", "B"),
    ("The answer is 5, not 6.", "6"),
    ("The answer is 5, not 6 or 7.", "5"),
    ("Final Answer: The largest $n$ is 35.", "34"),
    ("The largest n is 34. But wait, n = 35 also works.", "34"),
    ("The largest n is 34. But wait, n = 35 also works.", "35"),
    ("The largest n is not 34.", "34"),
    ("We know that the largest n is 34 only if k = 2. Then we continue with k.", "34"),
    ("The largest $n$ is 34 or 35.", "34"),
    ("Final Answer: I am not sure, maybe 34.", "34"),
    ("The answer might be 34.", "34"),
    ("The largest n could be 34.", "34"),
    ("After simplifying, x = 5.", "5"),
    ("We have 3 apples and 5 pears, total 8.", "8"),
    ("**Final Answer**\n6", "5"),
    ("**Final Answer:**\n\n5\n\nWait, I made an error: it is 6.", "5"),
    ("Therefore, x = 6.", "5"),
    ("Therefore, x = 5 or x = 6.", "5"),
    ("So x = 5 and y = 3.", "5"),
    ("Thus 2x = 10.", "5"),
    ("Therefore, $x \\approx 5$.", "5"),
    ("Therefore, x = 5. Now we check the second case.", "5"),
    ("The answer is:\n6", "5"),
    ("Therefore, x = 5 is not a solution.", "5"),
    ("So x = 5 for now.", "5"),
    # a number qualified as a bound or an estimate is not the value
    ("Final Answer: about 5", "5"),
    ("Final Answer: at least 5 people", "5"),
    ("Final Answer: Jane needs at most 5 hours", "5"),
    ("Final Answer: more than 5", "5"),
    ("The answer is $x=2$ or $x=3$.", "2"),
    ("Answer:\n```\n6\n```", "5"),
    ("Answer:\n```python\nprint(5)\n```", "5"),
]


def test_anchored_final_answers_without_a_box():
    check([(c, g, True) for c, g in ANCHORED])


def test_anchor_near_misses_rejected():
    check([(c, g, False) for c, g in ANCHOR_NEAR_MISSES])


def test_a_final_answer_line_after_the_last_box_overrides_it():
    assert not verify_math("\\boxed{42}\n\nFinal Answer: The final answer is 43.", "42")
    assert verify_math("\\boxed{42}\n\nFinal Answer: The final answer is $42$.", "42")
    assert verify_math("\\boxed{42}\n\nThis answer is correct because 6 times 7 is 42.", "42")


# ---------------------------------------------------------------- anchor spellings

# the anchor word, then a separator (colon, dash, en or em dash, arrow, "=", "=>"), with markdown
# emphasis around either part; a dash only where the anchor begins its line or is "final answer"
ANCHOR_SPELLINGS = [
    ("Answer - 5", "5"),
    ("Answer — 5", "5"),
    ("Answer – 5", "5"),
    ("Answer -- 5", "5"),
    ("ANSWER: 5", "5"),
    ("ANSWER — 5", "5"),
    ("Final answer → 5", "5"),
    ("Final answer => 5", "5"),
    ("Final Answer -> 5", "5"),
    ("Final answer ⇒ $\\frac{1}{2}$", "0.5"),
    ("Answer → 5 cm", "5"),
    ("Final answer – 5", "5"),
    ("So the final answer — 5.", "5"),
    ("__Answer:__ 5", "5"),
    ("*Answer*: 5", "5"),
    ("_Answer_: 5", "5"),
    ("*Final answer:* 5", "5"),
    ("**Answer** - 5", "5"),
    ("__Final Answer__ → 5", "5"),
    ("- Answer - 5", "5"),
    ("1. Answer - 5", "5"),
    ("My answer - 5", "5"),
    ("> **Answer:** 5", "5"),
    ("Answer - -5", "-5"),
    ("**Answer** — the value is 5.", "5"),
    ("\\boxed{5}\nAnswer - 5", "5"),
    ("Ans: 5", "5"),
    ("$$\\text{Answer: } 5$$", "5"),                  # the anchor inside a display's \\text
    ("\\[\\textbf{Answer:}\\ 5\\]", "5"),
    ("The answer is therefore 5.", "5"),
    ("The answer is thus $\\frac{1}{2}$.", "0.5"),
    # a JSON answer field, other answer tags, \\framebox
    ('{"answer": 5}', "5"),
    ('{"reasoning": "2 + 3", "answer": "5"}', "5"),
    ('```json\n{"final_answer": "\\\\frac{1}{2}"}\n```', "0.5"),
    ("{'answer': -5}", "-5"),
    ("<final_answer>5</final_answer>", "5"),
    ("\\framebox{5}", "5"),
    ('```python\nresult = {"answer": 0}\n```\nSo \\boxed{5}', "5"),   # a dict in code: no rival
    ("Ans. 5", "5"),
    ("ans. $\\frac{1}{2}$", "0.5"),
    ("Ans.: 5", "5"),
    # markdown marks in the answer's place: a blockquote, a setext heading's underline, a value
    # struck out before the right one
    ("Answer:\n\n> 5", "5"),
    ("**Final Answer:**\n> > $5$", "5"),
    ("Final Answer\n===\n5", "5"),
    ("Answer\n------\n\n$5$", "5"),
    ("Answer: ~~6~~ 5", "5"),
    ("Answer: ~~6~~ **5**", "5"),
    ("~~\\boxed{6}~~ \\boxed{5}", "5"),
    ("Answer: <del>6</del> 5", "5"),
    ("\\boxed{x~~=~~5}", "5"),                         # LaTeX's spaces, no strike-through
    ("Answer: $5~~\\text{cm}~~$", "5"),
]
ANCHOR_SPELLING_NEAR_MISSES = [
    ("the answer depends on 5 things", "5"),
    ("answer - not 5", "5"),
    ("Answer - 6", "5"),
    ("Final answer → 6", "5"),
    ("Answer — maybe 5", "5"),
    ("Answer → 5 or 6", "5"),
    ("The answer - about 5", "5"),
    ("I will answer - 5 ways to do it", "5"),     # a dash inside a sentence is punctuation
    ("Step 3 - answer - 5", "5"),
    ("We check the answer - it works. So 5 is it.", "5"),
    ("Answering - 5", "5"),
    ("I can answer - 5 is hard", "5"),
    ("final_answer = 5", "5"),                      # a name in code
    ("Answer -5", "5"),                             # "-5" or "Answer: 5"? neither is taken
    ("Answer -5", "-5"),
    ("Answer--5", "5"),
    ("\\boxed{5}\nAnswer - 6", "5"),                # a different value after the box competes
    ("Answer - 5\n\nWait, I made an error.", "5"),
    ("Ans: 6", "5"),
    ("The answer is therefore 6.", "5"),
    ('{"answer": 6}', "5"),
    ('{"answer": "5 or 6"}', "5"),
    ("<final_answer>6</final_answer>", "5"),
    ("\\framebox{6}", "5"),
    ("The fans: 5", "5"),                            # "ans" only as a word
    ("Ans. 6", "5"),
    ("Trans. 5", "5"),
    ("Answer:\n\n> 6", "5"),
    ("Final Answer\n===\n6", "5"),
    ("Answer: ~~5~~ 6", "5"),                        # the struck-out value is withdrawn
    ("~~\\boxed{5}~~ \\boxed{6}", "5"),
    ("Answer: <del>5</del> 6", "5"),
]


def test_anchor_spellings():
    check([(c, g, True) for c, g in ANCHOR_SPELLINGS])


def test_anchor_spelling_near_misses_rejected():
    check([(c, g, False) for c, g in ANCHOR_SPELLING_NEAR_MISSES])


# the anchor in other languages: "La respuesta es 5", "Die Antwort ist 5", "答案是 5", "Ответ: 5"
FOREIGN_ANCHORS = [
    "La respuesta es 5.", "La respuesta final es $5$.", "Respuesta: 5", "**Respuesta final:** 5",
    "La réponse est 5.", "Réponse : 5", "La réponse finale est $5$.", "Die Antwort ist 5.",
    "Antwort: 5", "Die endgültige Antwort lautet 5.", "答案是 5", "答案：5", "最终答案是 $5$。",
    "所以答案是5。", "Ответ: 5", "A resposta é 5.", "La risposta è 5.", "答え：5", "정답: 5",
    "Odpowiedź: 5", "Cevap: 5", "Antwoord: 5", "La respuesta correcta es 5.", "答案为5。",
    "Die Antwort ist 5 Äpfel.", "Ответ: 5 см.",
    "Jawaban: 5", "Đáp án: 5", "Câu trả lời: 5", "उत्तर: 5", "الإجابة: 5", "الجواب: ٥",
    "Απάντηση: 5",
]
FOREIGN_ANCHOR_NEAR_MISSES = [
    "La respuesta es 6.", "Die Antwort ist 6.", "答案是 6", "Ответ: 6", "La respuesta no es 5.",
    "Die Antwort ist nicht 5.", "La réponse n'est pas 5.", "答案不是5", "La respuesta es 5 o 6.",
    "Die Antwort ist 5 oder 6.", "答案可能是5", "Antwort: ungefähr 5",
    "Jawaban: 6", "Đáp án: 6", "الإجابة: 6",
]


def test_an_answer_stated_in_another_language():
    check([(c, "5", True) for c in FOREIGN_ANCHORS]
          + [(c, "5", False) for c in FOREIGN_ANCHOR_NEAR_MISSES])


def test_end_of_turn_tokens_of_other_chat_templates():
    check([
        ("\\boxed{5}<end_of_turn>\n<start_of_turn>user\nIs it 6? \\boxed{6}", "5", True),
        ("\\boxed{5}</s>[INST] Is it 6? [/INST] The answer is \\boxed{6}", "5", True),
        ("\\boxed{5}<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>\\boxed{6}", "5",
         True),
        ("\\boxed{6}</s>[INST] Is it 5? [/INST] \\boxed{5}", "5", False),
        ("\\boxed{6}<end_of_turn>\n<start_of_turn>user\nIs it 5? \\boxed{5}", "5", False),
        ("<s>\\boxed{4}</s> \\boxed{5}", "5", False),        # HTML strikethrough: a second box
    ])


# "<answer>" tags and "####" lines each state the final answer: one that differs from the final
# box, or from another tag, competes with it
def test_answer_tags_and_hash_lines_that_disagree_compete():
    check([
        ("<answer>6</answer>\nSo \\boxed{5}", "5", False),
        ("<answer>6</answer>\nSo \\boxed{5}", "6", False),
        ("<answer>5</answer><answer>6</answer>", "6", False),
        ("#### 6\n\\boxed{5}", "5", False),
        ("<answer>5</answer> \\boxed{5}", "5", True),
        ("<answer>5</answer><answer>5</answer>", "5", True),
        ("<answer>x = 5</answer>\n\\boxed{5}", "5", True),
        ("<answer>6</answer>. Wait, I made an error: \\boxed{5}", "5", True),
        ("<answer>The final answer is \\boxed{5}</answer>", "5", True),
    ])


# the last anchored statement counts, also when it follows another on the same line; one that
# only judges the answer ("This answer is correct.") is passed over; "should / must / will /
# would be" separate like "is" (not "would be ... if"); "not 5, it is 6" is 6
LATER_ANCHORS = [
    ("The answer is 5. Final answer: 6", "6"),
    ("The answer is 5, so the final answer is 6.", "6"),
    ("The answer is 12.\nThis answer is correct.", "12"),
    ("The answer is 12. I verified that the answer is right.", "12"),
    ("The answer is 12.\nThe answer is Tuesday.", "Tuesday"),
    ("So the answer would be 42.", "42"),
    ("The answer should be 42.", "42"),
    ("The answer must be $42$.", "42"),
    ("The answer is not 5, it is 6.", "6"),
    ("The answer is not 5 but 6.", "6"),
    ("The answer is not $5$; it's $6$.", "6"),
    ("Therefore the total cost is $12.50", "12.5"),
    ("Therefore, the total cost is \\$12.50.", "12.50"),
]
LATER_ANCHOR_NEAR_MISSES = [
    ("The answer is 5. Final answer: 6", "5"),
    ("The answer is 12.\nThe answer is Tuesday.", "12"),
    ("The answer would be 5 if n were odd.", "5"),
    ("The answer is not 5, it is 6.", "5"),
    ("The answer is not 5, since 5 is odd.", "5"),
    ("The answer is not 5, maybe 6.", "6"),
    ("The answer is 5... no, actually, it is 6.", "5"),
    ("The answer is 5. No wait, that is too small.", "5"),
    ("Therefore the total cost is $12.50", "12.49"),
]


def test_the_last_anchor_on_a_line_counts_and_assessments_are_passed_over():
    check([(c, g, True) for c, g in LATER_ANCHORS])
    check([(c, g, False) for c, g in LATER_ANCHOR_NEAR_MISSES])
    assert verify_math("The answer is 5. No, actually, that is right.", "5")


# "Answer: The value is 5." reads as "The answer is 5", as after "Final Answer:"; a bound or an
# estimate ("about", "at least", "more than", "approximately") is no value
ANSWER_SUBJECT_IS = [
    ("Answer: The value is 5.", "5"),
    ("Answer: The value is $5$.", "5"),
    ("Answer: The largest n is 34.", "34"),
    ("Answer: The total is 5 apples.", "5"),
    ("Answer: The value of x is 5, since 2x = 10.", "5"),
    ("Answer: The minimum is 5.", "5"),
    ("<answer>The value is 5.</answer>", "5"),
    ("<answer>\nThe answer is 5.\n</answer>", "5"),
]
ANSWER_SUBJECT_IS_NEAR_MISSES = [
    ("Answer: The value is about 5", "5"),
    ("Answer: The value is at least 5", "5"),
    ("Answer: The value is more than 5", "5"),
    ("Answer: The value is less than 5", "5"),
    ("Answer: The value is approximately 5", "5"),
    ("Answer: The value is roughly 5", "5"),
    ("Answer: The value is around 5", "5"),
    ("Answer: The value is nearly 5", "5"),
    ("Answer: The value is under 5", "5"),
    ("Answer: The value is 5 at most.", "5"),
    ("Answer: The value is 5 or so.", "5"),
    ("Answer: The value is \\approx 5", "5"),
    ("Answer: The value is 5 or 6", "5"),
    ("Answer: The value is not 5.", "5"),
    ("Answer: The value is 6.", "5"),
    ("Answer: Jane started 5 hours ago", "5"),       # a lone number: only after "Final Answer:"
    ("Final Answer: The value is about 5.", "5"),
    ("Final Answer: The value is over 5.", "5"),
    ("<answer>The value is about 5.</answer>", "5"),
    ("<answer>\nThe answer is 5 or 6.\n</answer>", "5"),
    ("<answer>The answer is 5. Wait, I made an error.</answer>", "5"),
]


def test_answer_colon_then_a_subject_is_statement():
    check([(c, g, True) for c, g in ANSWER_SUBJECT_IS])


def test_answer_colon_subject_near_misses_rejected():
    check([(c, g, False) for c, g in ANSWER_SUBJECT_IS_NEAR_MISSES])


# a value with its choice letter after it, "5 (B)", is "(B) 5": it equals the letter or the value
CHOICE_AFTER_VALUE = [
    ("Answer: 5 (B)", "5"),
    ("Answer: 5 (B)", "B"),
    ("Answer: 5 (B)", "(B)"),
    ("Answer: 5 (B)", "(B) 5"),
    ("Answer: (B) 5", "B"),
    ("Answer: (B) 5", "5"),
    ("Answer: $5$ (B)", "B"),
    ("Answer: \\frac{1}{2} (C)", "C"),
    ("Answer: \\frac{1}{2} (C)", "\\frac12"),
    ("\\boxed{5 \\text{ (B)}}", "B"),
    ("\\boxed{6 (B)}", "B"),
]
CHOICE_AFTER_VALUE_NEAR_MISSES = [
    ("Answer: 5 (B)", "C"),
    ("Answer: 6 (B)", "5"),
    ("Answer: (B) 5", "6"),
    ("Answer: (C) 5", "B"),
    ("Answer: 5 (B)", "(C) 5"),
    ("Answer: \\frac{1}{2} (C)", "B"),
    ("\\boxed{6 (B)}", "(C) 6"),
    ("\\boxed{f (B)}", "B"),                        # a function applied to B, no choice
]


# other spellings of the letter before its value: "B. 5", "B: 5", "Option (B) 5"
CHOICE_SPELLINGS = [
    ("The answer is B: 5", "B"),
    ("The answer is B: 5", "5"),
    ("\\boxed{B. 5}", "B"),
    ("\\boxed{B. 5}", "(B) 5"),
    ("Answer: option (B) 5", "B"),
    ("\\boxed{Option B: \\frac{1}{2}}", "0.5"),
    # a gold "e" is the letter (any case) and Euler's number
    ("\\boxed{(E)}", "e"),
    ("\\boxed{e}", "E"),
    ("\\boxed{e^1}", "e"),
    ("\\boxed{\\exp(1)}", "e"),
    ("\\boxed{e}", "\\exp(1)"),
    ("Answer: C. 5", "5"),                          # the letter, a full stop, then the value
    ("Answer: C. 5", "C"),
    ("The answer is (C). $\\frac{1}{2}$", "\\frac12"),
]
CHOICE_SPELLING_NEAR_MISSES = [
    ("The answer is B: 5", "C"),
    ("The answer is B: 6", "5"),
    ("Answer: B) 5", "B"),                          # unbalanced: malformed (tests/math_cases.py)
    ("\\boxed{B. 5}", "(B) 6"),
    ("\\boxed{B.5}", "B"),                         # B times 0.5, no choice
    ("\\boxed{A: 5, B: 6}", "A"),                  # two named values
    ("\\boxed{2.718}", "e"),
    ("\\boxed{D}", "e"),
    ("\\boxed{-e}", "e"),
    ("\\boxed{e^1}", "E"),                         # a capital E is only a letter
    ("Answer: C. 5", "6"),
    ("Answer: C. 5", "D"),
]
# a question with several right choices: the letters in any order and spelling
MULTI_SELECT = [
    ("\\boxed{A, C}", "AC", True),
    ("\\boxed{AC}", "A, C", True),
    ("\\boxed{A and C}", "AC", True),
    ("\\boxed{(A)(C)}", "A, C", True),
    ("\\boxed{\\text{(A), (C)}}", "AC", True),
    ("The answer is (A) and (C).", "AC", True),
    ("\\boxed{\\textbf{(C)}, \\textbf{(A)}}", "AC", True),
    ("\\boxed{D, A, C}", "ACD", True),
    ("\\boxed{\\{A, C\\}}", "AC", True),
    ("\\boxed{A B D}", "ABD", True),
    ("\\boxed{A}", "AC", False),
    ("\\boxed{A}", "A, C", False),
    ("\\boxed{ABC}", "A, C", False),
    ("\\boxed{A, B, C}", "AC", False),
    ("\\boxed{A, D}", "A, C, D", False),
    ("\\boxed{(A) 5, (C) 6}", "AC", False),
]


def test_a_value_with_its_choice_letter_after_it():
    check([(c, g, True) for c, g in CHOICE_AFTER_VALUE])


def test_a_value_with_its_choice_letter_near_misses():
    check([(c, g, False) for c, g in CHOICE_AFTER_VALUE_NEAR_MISSES])


def test_other_spellings_of_a_choice_letter_with_its_value():
    check([(c, g, True) for c, g in CHOICE_SPELLINGS])
    check([(c, g, False) for c, g in CHOICE_SPELLING_NEAR_MISSES])


def test_several_choice_letters_in_any_order_and_spelling():
    check(MULTI_SELECT)


# a markdown table row "| Answer | 5 |": the anchor word in the first cell, the value in the other
TABLE_ROWS = [
    ("| step | value |\n|---|---|\n| a | 3 |\n| **Answer** | **5** |", "5"),
    ("| Quantity | Value |\n|---|---|\n| Final answer | 5 |", "5"),
    ("| Step | Result |\n|---|---|\n| Answer | $\\frac{1}{2}$ |\n", "0.5"),
]
TABLE_ROW_NEAR_MISSES = [
    ("| Quantity | Value |\n|---|---|\n| Final answer | 6 |", "5"),
    ("| x | y |\n|---|---|\n| 1 | 5 |", "5"),         # no anchor word
    ("| n | answer |\n|---|---|\n| 1 | 5 |", "5"),    # the word is a column header
    ("| Answer | 5 | 6 |", "5"),                      # two values
    ("| Answer | 5 or 6 |", "5"),
    ("| Answer | 5 |\n\nWait, I made an error.", "5"),
]


def test_an_answer_row_of_a_markdown_table():
    check([(c, g, True) for c, g in TABLE_ROWS])


def test_markdown_table_near_misses():
    check([(c, g, False) for c, g in TABLE_ROW_NEAR_MISSES])


def test_a_tilde_before_the_number_is_about_not_the_value():
    # "~5" reads "about 5", a hedge like \\approx; a tilde elsewhere is LaTeX's unbreakable space
    check([
        ("The answer is ~5", "5", False),
        ("Answer: ~5", "5", False),
        ("Answer: $~5$", "5", False),
        ("\\boxed{~5}", "5", False),
        ("The answer is ~ 5 apples", "5", False),
        ("\\boxed{1~000}", "1000", True),
        ("\\boxed{x =~ 5}", "5", True),
        ("\\boxed{x~=~5}", "5", True),
        # no tolerance: a rounded value is not the exact one, and an estimate is a hedge
        ("\\boxed{3.14}", "\\pi", False),
        ("\\boxed{3.14}", "3.14159", False),
        ("\\boxed{3.140}", "3.14", True),
        ("\\boxed{\\approx 3.14}", "3.14", False),
        ("The answer is about 0.33.", "0.33", False),
        ("\\boxed{0.33}", "\\frac13", False),
    ])


def test_a_question_mark_right_after_the_final_box_is_a_hedge():
    check([
        ("\\boxed{5}?", "5", False),
        ("$\\boxed{5}$?", "5", False),
        ("\\[\\boxed{5}\\]\n?", "5", False),
        ("Is it \\boxed{5}? Let me check.", "5", False),
        ("\\boxed{5}. Is that right? Yes.", "5", True),     # a later question is a re-check
        ("\\boxed{5}!", "5", True),
    ])


# a word of doubt right before the final box, or right after it on its line, is a hedge like a
# question mark; so is a later "I'm not sure"; an approximate decimal after an exact value is not
DOUBT = [
    ("Perhaps \\boxed{5}.", "5", False),
    ("I guess \\boxed{5}.", "5", False),
    ("The answer is likely \\boxed{5}.", "5", False),
    ("The answer is probably $\\boxed{5}$.", "5", False),
    ("The total is about \\(\\boxed{5}\\).", "5", False),
    ("The answer is at least \\boxed{5}.", "5", False),
    ("\\boxed{5} (approximately)", "5", False),
    ("\\boxed{5} (approx.)", "5", False),
    ("\\boxed{5}, probably.", "5", False),
    ("\\boxed{5} (I'm not sure)", "5", False),
    ("\\boxed{5}\n\nI'm not 100% sure about this.", "5", False),
    ("\\boxed{5}. I am not completely certain.", "5", False),
    ("The maximum is \\boxed{5}.", "5", True),
    ("Thinking about it, the answer is \\boxed{5}.", "5", True),
    ("\\boxed{\\sqrt{26}} (approximately 5.10)", "\\sqrt{26}", True),
    ("\\boxed{\\sqrt{26}}\n\nApproximately 5.10.", "\\sqrt{26}", True),
    ("\\boxed{\\sqrt{26}}, roughly 5.1", "\\sqrt{26}", True),
    ("I'm not sure if there is a shorter way, but \\boxed{5}.", "5", True),
    ("\\boxed{5}. I'm not sure whether units are wanted: 5 cm.", "5", True),
]


def test_words_of_doubt_around_the_final_box_are_a_hedge():
    check(DOUBT)


def test_a_number_from_0_to_99_in_words():
    # the whole answer only ("one of them" stays words; words of what it counts may follow it,
    # test_a_number_in_words_with_what_it_counts_a_dozen_and_fractions)
    check([
        ("\\boxed{five}", "5", True),
        ("The answer is five.", "5", True),
        ("\\boxed{5}", "five", True),
        ("\\boxed{5}", "\\text{Five}", True),
        ("\\boxed{\\text{twenty-one}}", "21", True),
        ("\\boxed{Twenty one}", "21", True),
        ("\\boxed{minus three}", "-3", True),
        ("\\boxed{zero}", "0", True),
        ("\\boxed{six}", "5", False),
        ("\\boxed{fifty}", "15", False),
        ("\\boxed{five}", "-5", False),
        ("\\boxed{fifth}", "5", False),
        ("\\boxed{one of them}", "1", False),
        ("\\boxed{twenty-ten}", "30", False),
        ("\\boxed{five or six}", "5", False),
    ])


def test_a_number_in_words_with_what_it_counts_a_dozen_and_fractions():
    check([
        ("The answer is twelve apples.", "12", True),
        ("\\boxed{\\text{twelve apples}}", "12", True),
        ("The answer is a dozen.", "12", True),
        ("\\boxed{\\text{two dozen}}", "24", True),
        ("\\boxed{\\text{half a dozen eggs}}", "6", True),
        ("\\boxed{\\text{three quarters}}", "\\frac34", True),
        ("\\boxed{\\text{three-quarters}}", "0.75", True),
        ("\\boxed{\\text{one half}}", "1/2", True),
        ("\\boxed{\\text{a third}}", "\\frac{1}{3}", True),
        ("\\boxed{\\text{two fifths}}", "0.4", True),
        ("\\boxed{\\text{two and a half}}", "2.5", True),
        ("\\boxed{\\text{twelve apples}}", "13", False),
        ("\\boxed{\\text{one half}}", "1/3", False),
        ("\\boxed{\\text{third}}", "\\frac13", False),          # an ordinal, not a fraction
        ("\\boxed{\\text{five five}}", "5", False),
        ("\\boxed{\\text{a dozen or so}}", "12", False),
        ("\\boxed{\\text{zero halves}}", "0", False),
    ])


def test_a_transpose_is_not_dropped():
    check([
        ("\\boxed{x^T}", "x", False),
        ("\\boxed{A^{T}}", "A", False),
        ("\\boxed{A}", "A^\\top", False),
        ("\\boxed{A^{T}}", "A^T", True),
        ("\\boxed{A^\\top}", "A^T", True),
        ("\\boxed{A^\\intercal}", "A^{\\top}", True),
    ])


# HTML formatting from chat front-ends, emphasis with underscores, emoji, and the other unicode
# hyphens and minus signs before a number
MARKUP_AND_SYMBOLS = [
    ("\\boxed{\\emph{5}}", "5", True),
    ("\\boxed{\\underbrace{5}_{\\text{ans}}}", "5", True),     # a brace's annotation
    ("\\boxed{\\overbrace{6}^{\\text{ans}}}", "5", False),
    ("\\boxed{5_{}}", "5", True),                               # an empty index
    ("\\boxed{{5}^{}}", "5", True),
    ("\\boxed{1_000}", "1000", True),                           # Python's digit grouping
    ("\\boxed{1_000_000}", "10^6", True),
    ("\\boxed{1_000}", "100", False),
    ("\\boxed{2\\*\\*3}", "8", True),                           # escaped stars
    ("\\boxed{2\\*3}", "6", True),
    ("\\boxed{\\ensuremath{5}}", "5", True),
    ("\\boxed{\\emph{6}}", "5", False),
    # invisible format characters (zero-width space, BOM, right-to-left mark, soft hyphen)
    ("\\boxed{5\u200b}", "5", True),
    ("\\boxed{\ufeff5}", "5", True),
    ("\\boxed{\u200f٥}", "5", True),
    ("Answer:\u200b 5", "5", True),
    ("\\boxed{1\xad000}", "1000", True),
    ("\\boxed{6\u200b}", "5", False),
    # mathematical alphanumerics, and the anchor written inside the box
    ("\\boxed{𝐀}", "A", True),
    ("\\boxed{𝟔}", "5", False),
    ("\\boxed{\\text{The answer is } 5}", "5", True),
    ("\\boxed{Answer: 5}", "5", True),
    ("\\boxed{Answer: 6}", "5", False),
    ("The answer is <b>5</b>.", "5", True),
    ("<b>Answer:</b> 5", "5", True),
    ("<strong>Final Answer:</strong> 5", "5", True),
    ("<p>The answer is 5.</p>", "5", True),
    ("Answer: <code>5</code>", "5", True),
    ("Answer: <span class=\"ans\">5</span>", "5", True),
    ("Answer: 5<sup>2</sup>", "25", True),
    ("Answer: x<sub>1</sub> = 5", "5", True),
    ("The answer is <b>6</b>.", "5", False),
    ("Answer: 5<sup>2</sup>", "5", False),
    ("<p>The answer is 6.</p>", "5", False),
    ("<b>Answer:</b> 5<br>Wait, I made an error.", "5", False),
    ("The answer is _5_.", "5", True),
    ("The answer is 5 🎉", "5", True),
    ("\\boxed{5} ✅", "5", True),
    ("\\boxed{5️⃣}", "5", True),
    ("The answer is 6 🎉", "5", False),
    ("\\boxed{20°}", "20", True),                  # the degree sign is a symbol too: kept
    ("\\boxed{\u20115}", "-5", True),                # non-breaking hyphen
    ("\\boxed{\u20105}", "-5", True),
    ("\\boxed{\u20125}", "-5", True),                # figure dash
    ("\\boxed{\ufe635}", "-5", True),                # small hyphen-minus
    ("\\boxed{\u20115}", "5", False),
    # named spaces and font switches carry no value; other inequality signs; subscript digits
    ("\\boxed{5\\enspace}", "5", True),
    ("\\boxed{1\\thinspace 000}", "1000", True),
    ("\\boxed{\\medspace 5 \\>}", "5", True),
    ("\\boxed{5\\ }", "5", True),
    ("\\boxed{5\\ \\ \\ }", "5", True),
    ("\\boxed{\\texttt{5}}", "5", True),
    ("\\boxed{\\mathsf{5}}", "5", True),
    ("\\boxed{\\boldmath 5}", "5", True),
    ("\\boxed{x ⩾ 3}", "[3, \\infty)", True),
    ("\\boxed{x ≦ 3}", "(-\\infty, 3]", True),
    ("\\boxed{x₁ + x₂}", "x_1 + x_2", True),
    ("\\boxed{a_₁₂}", "a_{12}", True),
    ("\\boxed{6\\enspace}", "5", False),
    ("\\boxed{x ⩾ 3}", "(3, \\infty)", False),
    ("\\boxed{x₁}", "x1", False),                         # an index, not the product x1
    ("\\boxed{x₁₂}", "x_1", False),
]


def test_html_emphasis_emoji_and_unicode_minus_signs():
    check(MARKUP_AND_SYMBOLS)


def test_a_scale_word_after_digits_multiplies():
    # "2 million" is 2000000, never 2 with a unit word dropped
    check([
        ("\\boxed{2 \\text{ million}}", "2000000", True),
        ("\\boxed{2000000}", "2 million", True),
        ("The answer is 1.5 million dollars.", "1500000", True),
        ("\\boxed{\\$1.5 \\text{ Million}}", "\\$1,500,000", True),
        ("\\boxed{2 hundred thousand}", "200000", True),
        ("\\boxed{1.2345 hundred}", "123.45", True),
        ("\\boxed{2 \\text{ million}}", "2", False),
        ("\\boxed{2}", "2 \\text{ million}", False),
        ("The answer is 3 thousand.", "3", False),
        ("\\boxed{1.5 million}", "1.5", False),
        ("\\boxed{2 million}", "200000", False),
        ("\\boxed{2 dozen}", "24", True),                # a dozen is a scale word too
        ("\\boxed{3 dozen eggs}", "36", True),
        ("\\boxed{1.5 dozen}", "18", True),
        ("\\boxed{a half dozen}", "6", True),
        ("\\boxed{24}", "2 dozen", True),
        ("\\boxed{2 dozen}", "2", False),
        ("\\boxed{3 dozen eggs}", "3", False),
    ])


def test_end_of_proof_marks_negative_in_words_and_degrees_against_radians():
    check([
        ("\\boxed{5 \\quad \\blacksquare}", "5", True),      # an end-of-proof mark has no value
        ("\\boxed{5 \\qed}", "5", True),
        ("\\boxed{5∎}", "5", True),
        ("\\boxed{6 \\quad \\blacksquare}", "5", False),
        ("\\boxed{negative five}", "-5", True),
        ("\\boxed{Negative twenty-one}", "-21", True),
        ("\\boxed{negative five}", "5", False),
        ("\\boxed{12^\\circ}", "12 \\text{ radians}", False),  # two different angle units
        ("\\boxed{12 \\text{ rad}}", "12^\\circ", False),
        ("\\boxed{12°}", "12 \\text{ degrees}", True),
        ("\\boxed{12 \\text{ radians}}", "12", True),
        # degrees and radians are never converted: the gold's unit is the one the question asked
        ("\\boxed{45^\\circ}", "\\frac{\\pi}{4}", False),
        ("\\boxed{180°}", "\\pi", False),
        ("\\boxed{\\frac{\\pi}{4} \\text{ rad}}", "45 degrees", False),
        ("\\boxed{45}", "45^\\circ", True),
        ("\\boxed{\\frac{\\pi}{4}}", "\\frac{\\pi}{4} \\text{ rad}", True),
    ])


def test_any_english_cardinal_in_words():
    check([
        ("\\boxed{one thousand}", "1000", True),
        ("\\boxed{\\text{two thousand five hundred}}", "2500", True),
        ("\\boxed{three hundred and forty-two}", "342", True),
        ("The answer is one million two hundred thousand.", "1200000", True),
        ("\\boxed{one hundred}", "1000", False),
        ("\\boxed{five thousand two thousand}", "7000", False),
        ("\\boxed{one hundred and}", "100", False),
        ("\\boxed{nineteen hundred}", "1900", False),   # not a cardinal (a year reading)
        ("\\boxed{nineteen hundred}", "19", False),     # nor 19 with a unit word
        ("\\boxed{one thousand and one}", "1001", True),  # "and" after a scale word
        ("\\boxed{two million and fifty}", "2000050", True),
        ("\\boxed{one thousand and one}", "1000, 1", False),
        ("\\boxed{a hundred}", "100", False),
    ])


# a value, then the same value said another way in parentheses: the two must agree
GLOSSES = [
    ("\\boxed{5 (five)}", "5"),
    ("Answer: $5$ (five)", "5"),                     # after an anchored formula too
    ("Answer: $x = 5$ (that is, five)", "5"),
    ("\\boxed{5} (i.e., five)", "5"),
    ("\\boxed{5} (five)", "5"),
    ("\\boxed{5} (see step 3)", "5"),
    ("Answer: $5$ (see above)", "5"),                 # no value in it: no gloss
    ("\\boxed{5 \\text{ (five)}}", "5"),
    ("\\boxed{12 \\text{ (twelve apples)}}", "12"),
    ("\\boxed{1000 (one thousand)}", "1000"),
    ("\\boxed{\\frac{1}{2} (0.5)}", "0.5"),
    ("\\boxed{0.5 (\\frac{1}{2})}", "\\frac12"),
    ("\\boxed{25\\% (0.25)}", "25\\%"),
    ("\\boxed{120 (= 5!)}", "120"),
    ("\\boxed{120 \\text{ (i.e. } 5!)}", "120"),
    ("\\boxed{5 \\text{ (in cm)}}", "5"),
    ("\\boxed{5 (\\text{cm})}", "5"),
    ("Thus the answer is 42 (forty-two).", "42"),
    ("\\boxed{(x+1) (x-1)}", "x^2-1"),          # a product, no gloss
]
GLOSS_NEAR_MISSES = [
    ("\\boxed{5 (six)}", "5"),
    ("Answer: $5$ (six)", "5"),
    ("Answer: $x = 5$ (that is, six)", "5"),
    ("Answer: $5$ (= 6)", "5"),
    ("\\boxed{5} (i.e., six)", "5"),
    ("\\boxed{5} (six)", "5"),
    ("\\boxed{5} \\; \\text{(six)}", "5"),
    ("\\boxed{5} \\quad (six)", "5"),
    ("$\\boxed{5}$ (= 6)", "5"),
    # a trailing ellipsis after an anchor: the digits go on
    ("Final answer: 5…", "5"),
    ("Final answer: 5...", "5"),
    ("The answer is 5...", "5"),
    ("\\boxed{5 (five)}", "6"),
    ("\\boxed{\\frac{1}{2} (0.6)}", "\\frac12"),
    ("\\boxed{120 (=5!)}", "121"),
    ("\\boxed{5 (five hundred)}", "5"),
    ("\\boxed{3 (rounded)}", "3"),               # an estimate
    ("\\boxed{3 (or 4)}", "3"),
    ("\\boxed{\\pi (\\approx 3.14)}", "\\pi"),
    ("\\boxed{\\sqrt{2} (about 1.414)}", "\\sqrt2"),
    ("\\boxed{2 (3)}", "5"),                     # math-verify reads "2(3)" as 2 + 3
    ("The answer is 7 (six apples).", "7"),
]


def test_a_gloss_in_parentheses_must_agree_with_the_value():
    check([(c, g, True) for c, g in GLOSSES] + [(c, g, False) for c, g in GLOSS_NEAR_MISSES])


# a word gold said with filler words around it, or yes / no with its reason
WORD_ANSWERS = [
    ("The answer is on Tuesday.", "Tuesday", True),
    ("\\boxed{\\text{On a Tuesday}}", "Tuesday", True),
    ("The answer is the blue one.", "blue", True),
    ("\\boxed{\\text{The answer is even}}", "\\text{even}", True),
    ("\\boxed{\\text{yes, it is possible}}", "Yes", True),
    ("\\boxed{\\text{No, it is not possible}}", "no", True),
    ("The answer is on Wednesday.", "Tuesday", False),
    ("\\boxed{\\text{not on Tuesday}}", "Tuesday", False),
    ("The answer is at Alice's house.", "Alice", False),
    ("Answer: Alice loses.", "Alice", False),
    ("\\boxed{\\text{in the blue box}}", "blue", False),
    ("\\boxed{\\text{Yes, but only for even n}}", "yes", False),
    ("\\boxed{\\text{yes, no}}", "yes", False),
    ("\\boxed{\\text{no, it is true}}", "no", False),
    ("\\boxed{\\text{yesterday}}", "yes", False),
    ("\\boxed{\\text{no solution}}", "no", False),
    ("\\boxed{\\text{on Tuesday!}}", "Tuesday", True),
    # a sign, an operator or a bar on a letter or a word makes it another answer
    ("\\boxed{-x}", "x", False),
    ("\\boxed{-i}", "i", False),
    ("\\boxed{x!}", "x", False),
    ("\\boxed{|x|}", "x", False),
    ("\\boxed{-e}", "e", False),
    ("\\boxed{-B}", "B", False),
    ("\\boxed{-\\text{Tuesday}}", "Tuesday", False),
]


def test_a_word_answer_with_filler_words_or_a_reason():
    check(WORD_ANSWERS)


# formats graders use (Minerva, GSM8K, <answer> tags), punctuation around the box, and gold
# answers spelled in other ways; these held before and must keep holding
GRADER_FORMATS = [
    ("**Final Answer**\n\\boxed{5}", "5", True),
    ("**Final Answer**\n\\[\n\\boxed{5}\n\\]", "5", True),
    ("**Final Answer**\n\\boxed{6}", "5", False),
    ("\\boxed{6}\n\n**Final Answer**\n\\boxed{5}", "5", False),
    ("Final Answer: The final answer is $\\boxed{5}$. I hope it is correct.", "5", True),
    ("Final Answer: The final answer is $5$. I hope it is correct.", "5", True),
    ("Final Answer: The final answer is $6$. I hope it is correct.", "5", False),
    ("#### 5", "5", True),
    ("####5", "5", True),
    ("#### 1,234", "1234", True),
    ("#### $5.00", "5", True),
    ("#### 6", "5", False),
    ("<answer> 5 </answer>", "5", True),
    ("<answer>\n$5$\n</answer>", "5", True),
    ("<ANSWER>5</ANSWER>", "5", True),
    ("<answer>5 or 6</answer>", "5", False),
    ("\\boxed{5.}", "5", True),
    ("\\boxed{5}.", "5", True),
    ("$\\boxed{5}$!", "5", True),
    ("\\boxed{5.0}", "5", True),
    ("\\boxed{5.5}", "5", False),
    ("\\boxed{5}", "$5$", True),
    ("\\boxed{5}", "\\$5.00", True),
    ("\\boxed{5}", "5/1", True),
    ("\\boxed{5}", "\\text{5}", True),
    ("\\boxed{5.01}", "\\$5.00", False),
    ("\\boxed{50}", "5.0", False),
    ("\\boxed{tuesday}", "Tuesday", True),
    ("\\boxed{Wednesday}", "Tuesday", False),
    ("\\boxed{North-East}", "north-east", True),
    ("\\boxed{northeast}", "north-east", True),
    ("\\boxed{north-west}", "north-east", False),
    ("\\boxed{YES}", "\\text{yes}", True),
    ("\\boxed{no}", "\\text{yes}", False),
    ("\\boxed{5 apples}", "5", True),
    ("\\boxed{5}", "5 apples", True),
    ("\\boxed{6 apples}", "5", False),
    ("\\boxed{5 apples and 3 pears}", "5", False),
]


def test_grader_formats():
    check(GRADER_FORMATS)


# gold answers as datasets store them: a JSON true / false (StrategyQA) read as "True" / "False"
# means yes / no, and a short gold that is itself an anchored statement is its value
GOLD_SPELLINGS = [
    ("\\boxed{Yes}", "True", True),
    ("\\boxed{7}", "7\\text{ (seven)}", True),              # a gloss in the gold
    ("\\boxed{5}", "**5**", True),                          # markdown bold or code around it
    ("\\boxed{5}", "`5`", True),
    ("\\boxed{5}", "5 \\\\", True),                           # a trailing LaTeX line break
    ("\\boxed{5}", "**6**", False),
    ("\\boxed{7}", "7 (= 3 + 4)", True),
    ("\\boxed{8}", "7\\text{ (seven)}", False),
    ("\\boxed{5 \\frac{m}{s}}", "5", True),
    ("\\boxed{\\infty}", "\\text{infinitely many}", True),
    ("\\boxed{no}", "False", True),
    ("\\boxed{\\text{No, 7 is prime.}}", "false", True),
    ("The answer is true.", "yes", True),
    ("\\boxed{Yes}", "False", False),
    ("\\boxed{false}", "yes", False),
    ("\\boxed{\\text{No, it is true}}", "False", False),
    ("\\boxed{N}", "No", False),
    ("\\boxed{12}", "The answer is 12.", True),
    ("\\boxed{12}", "Answer: 12", True),
    ("\\boxed{B}", "Answer: (B)", True),
    ("\\boxed{13}", "The answer is 12.", False),
    ("\\boxed{C}", "Answer: (B)", False),
    ("\\boxed{\\text{no answer}}", "no answer", True),
]


def test_gold_spellings_of_datasets():
    check(GOLD_SPELLINGS)


def test_thousands_separators_of_other_locales():
    check([
        ("\\boxed{1.234.567}", "1234567", True),
        ("\\boxed{1.000.000}", "10^6", True),
        ("The answer is 1.234.567.", "1234567", True),
        ("\\boxed{1'234}", "1234", True),
        ("\\boxed{1’234’567}", "1234567", True),
        ("\\boxed{1'000.5}", "1000.5", True),
        ("\\boxed{1.234}", "1234", False),                  # one dot: a decimal point
        ("\\boxed{1.234.567}", "1.234567", False),
        ("\\boxed{1.234,5}", "1234.5", True),               # after dot groups: a decimal comma
        ("\\boxed{(1.234,5)}", "1234.5", False),            # a point, not one number
        ("\\boxed{12,5}", "12.5", False),
        ("\\boxed{1'2}", "12", False),
        ("\\boxed{2'}", "2", False),                        # minutes of arc or feet
        ("\\boxed{1.23.456}", "123456", False),
        ("\\boxed{1,00,000}", "100000", True),             # Indian: lakhs and crores
        ("\\boxed{12,34,567}", "1234567", True),
        ("\\boxed{\\text{Rs. }1,23,45,678.50}", "12345678.5", True),
        ("\\boxed{100000}", "1,00,000", True),
        ("\\boxed{1,00,00}", "10000", False),              # not the Indian grouping
        ("\\boxed{1,000,00}", "100000", False),
        ("\\boxed{(5)}", "5", True),                       # grouping, not accounting's -5
        ("\\boxed{(5)}", "-5", False),
        ("\\boxed{−5}", "-5", True),
    ])


def test_roman_numerals_and_an_ordinal_after_the():
    check([
        ("\\boxed{VI}", "IV", False),                       # not the product of V and I
        ("\\boxed{II}", "III", False),
        ("\\boxed{IV}", "IV", True),
        ("\\boxed{\\text{XII}}", "XII", True),
        ("\\boxed{IV}", "4", False),                        # a label, as in "I, II and IV"
        ("The answer is the 3rd.", "3", True),
        ("\\boxed{\\text{the 5th term}}", "5", True),
        ("\\boxed{\\text{the 3rd}}", "4", False),
        ("\\boxed{\\text{third}}", "3", False),             # an ordinal word: not its number
        # ... unless it names a position: after "the", before a noun, or a compound
        ("The answer is the third.", "3", True),
        ("\\boxed{\\text{the third}}", "3", True),
        ("\\boxed{\\text{twenty-first}}", "21", True),
        ("\\boxed{\\text{the twenty-first term}}", "21", True),
        ("\\boxed{\\text{second place}}", "2", True),
        ("\\boxed{\\text{the one hundred first}}", "101", True),
        ("\\boxed{\\text{the third}}", "the third", True),
        ("\\boxed{\\text{the third}}", "4", False),
        ("\\boxed{\\text{twenty-first}}", "20", False),   # not "twenty" and a unit "first"
        ("\\boxed{\\text{twenty-fifth}}", "4", False),    # not 20/5
        ("\\boxed{\\text{twenty-fifth}}", "25", True),
        ("\\boxed{\\text{twenty fifths}}", "4", True),    # a fraction
        ("\\boxed{\\text{third of them}}", "3", False),
        ("\\boxed{\\text{the twentieth}}", "20", True),
    ])


# ---------------------------------------------------------------- percentages in words

PERCENT = [
    ("\\boxed{28\\%}", "28 percent"),
    ("\\boxed{28 percent}", "28\\%"),
    ("\\boxed{28 pct}", "28\\%"),
    ("\\boxed{28\\text{ percent}}", "28\\%"),
    ("\\boxed{28\\ \\text{pct}}", "28\\%"),
    ("The answer is 28 percent.", "28\\%"),
    ("\\boxed{28 per cent}", "$28\\%$"),
    ("\\boxed{28 percentage points}", "28\\%"),
    ("\\boxed{28\\%}", "28"),
    ("\\boxed{28}", "28 percent"),
    ("\\boxed{0.28}", "28 percent"),
    ("The answer is $28$ %.", "28\\%"),
    ("\\boxed{28 Percent}", "28\\%"),
    ("\\boxed{\\frac{7}{25}}", "28\\%"),
    ("\\boxed{28\\%}", "\\frac{7}{25}"),
]
PERCENT_NEAR_MISSES = [
    ("\\boxed{29 percent}", "28\\%"),
    ("\\boxed{2.8\\%}", "28\\%"),
    ("\\boxed{28 percent}", "0.028"),
    ("\\boxed{0.28\\%}", "28\\%"),
    ("\\boxed{28 pct}", "27"),
    ("\\boxed{0.28}", "28"),                 # no percent sign on either side: two numbers
    ("\\boxed{28}", "0.28"),
]


# a ratio of two numbers is its quotient; one of three or more is its proportions
RATIOS = [
    ("\\boxed{1:2}", "\\frac12", True),
    ("\\boxed{0.5}", "1:2", True),
    ("\\boxed{2:4}", "1:2", True),
    ("\\boxed{1 \\colon 2}", "1:2", True),
    ("\\boxed{2:4:6}", "1:2:3", True),
    ("\\boxed{1:2:3}", "0.5:1:1.5", True),
    ("\\boxed{2 \\colon 4 \\colon 6}", "1:2:3", True),
    ("\\boxed{1:2}", "2:1", False),
    ("\\boxed{1:2:3}", "3:2:1", False),
    ("\\boxed{1:2:3}", "1:2:4", False),
    ("\\boxed{1:2:3}", "1:2", False),
    ("\\boxed{2:04:06}", "1:02:03", False),               # times of day, not ratios
    # a ratio of three terms is no time with seconds, whatever its quotient
    ("\\boxed{1:2:3}", "1:02:03", False),
    ("\\boxed{1:02:03}", "1:2:3", False),
    ("\\boxed{01:02:03}", "1:2:3", False),
    ("\\boxed{01:02:03}", "1:02:03", True),
    # a ratio in words, "a to b", is a:b
    ("\\boxed{1 to 2}", "1:2", True),
    ("\\boxed{3 \\text{ to } 4}", "0.75", True),
    ("The ratio is 1 to 2.", "\\frac12", True),
    ("\\boxed{2 to 1}", "1:2", False),
    ("\\boxed{1 to 3}", "1:2", False),
]


def test_ratios():
    check(RATIOS)


def test_percent_in_words():
    check([(c, g, True) for c, g in PERCENT] + [(c, g, False) for c, g in PERCENT_NEAR_MISSES])


# ---------------------------------------------------------------- units and words in the gold

UNITS = [
    ("\\boxed{5 \\text{ J}}", "5"),                           # SI symbols in \\text or \\mathrm
    ("\\boxed{5\\,\\mathrm{kPa}}", "5"),
    ("\\boxed{5\\,\\Omega}", "5"),
    ("\\boxed{5 \\text{ N}}", "5 \\text{ newtons}"),
    ("\\boxed{5 m²}", "5"),                                  # a one-letter unit with a power
    ("\\boxed{5 \\text{ m}^2}", "5 m^{2}"),
    ("\\boxed{5 \\text{ meters/second}}", "5 \\text{ m/s}"),
    ("\\boxed{5 \\frac{m}{s}}", "5"),                       # a rate as a fraction of units
    ("\\boxed{5\\,\\frac{\\text{km}}{\\text{h}}}", "5 \\text{ km/h}"),
    ("\\boxed{5 \\dfrac{\\mathrm{m}}{\\mathrm{s}}}", "5 \\text{ m/s}"),
    ("\\boxed{5 mph}", "5 \\text{ miles/hour}"),
    ("\\boxed{5 \\text{ m/s}}", "5"),
    ("\\boxed{5}", "5 cm"),
    ("\\boxed{5}", "\\text{5 apples}"),
    ("\\boxed{12}", "$12 dollars"),
    ("\\boxed{\\$12}", "$12 dollars"),
    ("The answer is $12.", "12 \\text{ dollars}"),
    ("\\boxed{3}", "3 \\text{ hours}"),
    ("\\boxed{4}", "4 red marbles"),
    ("\\boxed{12}", "12 square units"),
    ("\\boxed{6}", "6\\ \\text{ft}^2"),
    ("\\boxed{7}", "\\text{7 days}"),
    ("\\boxed{18}", "18 \\mbox{ inches}"),
    ("\\boxed{2.5}", "2.5 \\text{ km}"),
    ("\\boxed{15 \\text{cm}^2}", "15 \\text{ cm}^2"),
    ("\\boxed{5\\text{ cm}}", "5 centimeters"),
    ("\\boxed{8 \\text{ cookies}}", "8"),
    ("\\boxed{3\\sqrt{2}\\text{ m}}", "3\\sqrt{2} \\text{ meters}"),
    # currencies other than the dollar, and a temperature scale after the degree sign
    ("\\boxed{€5}", "5"),
    ("\\boxed{£12.50}", "12.5"),
    ("\\boxed{5 \\text{ €}}", "5"),
    ("\\boxed{USD 5}", "5"),
    ("\\boxed{₩5000}", "5000"),                                # any currency sign or code
    ("\\boxed{₽120}", "120"),
    ("\\boxed{CHF 5}", "5"),
    ("\\boxed{5 \\text{ m s}^{-1}}", "5 \\text{ m/s}"),       # a negative power: a rate
    ("\\boxed{60 \\text{ km h}^{-1}}", "60 km/h"),
    ("\\boxed{5\\,\\mathrm{m\\,s^{-1}}}", "5"),
    ("\\boxed{9.8 m s^{-2}}", "9.8 \\text{ m/s}^2"),
    ("\\boxed{\\text{Rs. }250}", "250"),
    ("The answer is €40.", "40"),
    ("\\boxed{20^\\circ\\text{C}}", "20"),
    ("\\boxed{20°C}", "20^\\circ"),
    ("\\boxed{-5^{\\circ} F}", "-5"),
    # degrees and minutes (and seconds) are one angle
    ("\\boxed{30.25^\\circ}", "30^\\circ 15'"),
    ("\\boxed{30°15′}", "30.25^\\circ"),
    ("\\boxed{30^{\\circ}15'36''}", "30.26"),
    ("\\boxed{\\frac{31}{3}^\\circ}", "10^\\circ 20'"),
    # a time of day: AM / PM are its unit, also spelled a.m. / p.m.
    ("\\boxed{3:00 p.m.}", "3:00 PM"),
    ("\\boxed{3 PM}", "3 p.m."),
    ("\\boxed{3:00\\text{ PM}}", "3:00\\text{ p.m.}"),
    ("The answer is 3:00 p.m.", "3:00"),
    # a unit after a multiple of pi (areas and volumes of circles, spheres and cones)
    ("\\boxed{\\$5}", "5 \\text{ dollars}"),
    ("\\boxed{5 \\text{ dollars}}", "\\$5.00"),
    ("\\boxed{16\\pi \\text{ cm}^2}", "16\\pi"),
    ("\\boxed{16\\pi}", "16\\pi\\text{ cm}^2"),
    ("\\boxed{5\\pi\\,\\text{cm}^3}", "5\\pi"),
    ("\\boxed{25\\pi}", "25\\pi\\text{ square units}"),
    ("The area is $\\pi$ square units.", "\\pi"),
    ("\\boxed{5¢}", "5"),
    ("\\boxed{\\pi r^2 h}", "\\pi h r^2"),
    ("\\boxed{5t}", "5t"),
    ("\\boxed{x = 5 \\text{ cm}}", "5"),
    ("\\boxed{5 \\text{ sq m}}", "5"),                       # a unit's letter after its word
    ("\\boxed{2 \\text{ t}}", "2"),                          # in \\text{}: tonnes, days
    ("\\boxed{3\\text{ d}}", "3"),
    ("\\boxed{5 \\text{ more}}", "5"),                       # "how many more": the difference
    ("\\boxed{3 \\text{ fewer}}", "3"),
    ("\\boxed{5 less}", "5"),
]
UNIT_NEAR_MISSES = [
    ("\\boxed{6 \\text{ J}}", "5"),
    ("\\boxed{5 \\text{ N}}", "5 \\text{ J}"),                # two different units
    ("\\boxed{5 \\text{ W}}", "5 \\text{ V}"),
    ("\\boxed{5 \\text{ A}}", "5"),                           # a choice letter, not amperes
    ("\\boxed{5 N}", "5"),                                    # bare: perhaps the product 5N
    ("\\boxed{5 \\text{ cm}^2}", "5 m^{2}"),
    ("\\boxed{30.15^\\circ}", "30^\\circ 15'"),
    ("\\boxed{30^\\circ 16'}", "30.25^\\circ"),
    ("\\boxed{30, 15}", "30^\\circ 15'"),
    ("\\boxed{5 \\frac{km}{h}}", "5 \\text{ m/s}"),
    ("\\boxed{6 \\frac{m}{s}}", "5"),
    ("\\boxed{5 \\frac{m}{n}}", "5"),                       # letters, not units
    ("\\boxed{5 \\frac{a}{b}}", "5"),
    ("\\boxed{5 \\text{ km/h}}", "5 \\text{ m/s}"),           # a rate: both units count
    ("\\boxed{5 \\text{ ft/s}}", "5 \\text{ m/s}"),
    ("\\boxed{5 \\text{ m/min}}", "5 \\text{ m/s}"),
    ("\\boxed{12:30 AM}", "12:30 PM"),
    ("\\boxed{3 AM}", "3 PM"),
    ("\\boxed{3:00 a.m.}", "3:00 PM"),
    ("\\boxed{3:00\\text{ AM}}", "3:00\\text{ p.m.}"),
    ("\\boxed{6}", "5 cm"),
    ("\\boxed{6}", "\\text{5 apples}"),
    ("\\boxed{5 \\text{ m}}", "5 cm"),
    ("\\boxed{5 \\text{ mm}}", "5 \\text{ cm}"),
    ("\\boxed{12 \\text{ cents}}", "12 dollars"),
    ("\\boxed{13}", "$12 dollars"),
    ("\\boxed{5 \\text{ cm}}", "5 \\text{ cm}^2"),
    ("\\boxed{€6}", "5"),
    ("\\boxed{USD 0.5}", "5"),
    ("\\boxed{₩6}", "5"),
    ("\\boxed{5 m s^{-1}}", "5 \\text{ km/h}"),
    ("\\boxed{5 \\text{ m s}^{-2}}", "5 \\text{ m/s}"),
    ("\\boxed{21^\\circ\\text{C}}", "20"),
    # a word that qualifies the number is no unit
    ("\\boxed{5 \\text{ likely}}", "5"),
    ("\\boxed{5 \\text{ minimum}}", "5"),
    ("\\boxed{5ish}", "5"),
    ("The answer is 5 roughly.", "5"),
    ("\\boxed{5 \\text{ people at most}}", "5"),
    ("\\boxed{16\\pi \\text{ cm}^2}", "16\\pi \\text{ m}^2"),
    ("\\boxed{16\\pi \\text{ cm}^2}", "15\\pi"),
    # a dollar sign before the number is a unit too: $5 is not 5 cents
    ("\\boxed{\\$5}", "5 \\text{ cents}"),
    ("\\boxed{5 \\text{ cents}}", "\\$5"),
    ("The answer is $5.", "5 cents"),
    ("\\boxed{\\text{\\$}5}", "5\\text{ cents}"),
    ("\\boxed{5¢}", "\\$5"),                               # the cent sign is cents
    ("\\boxed{5\\textcent}", "0.05"),
    # a letter that is a variable is no unit, also where a unit list has it ("t", "h", "c")
    ("\\boxed{5t}", "5"),
    ("\\boxed{5 \\text{ or more}}", "5"),
    ("\\boxed{5 \\text{ more or less}}", "5"),
    ("\\boxed{5 \\text{ ab c}}", "5"),
    ("\\boxed{2c}", "2"),
    ("\\boxed{3bc}", "3"),
    ("\\boxed{x + 5 t}", "x+5"),
    ("\\boxed{\\pi r^2}", "\\pi r^2 h"),
    ("\\boxed{\\pi r^2 h}", "\\pi r^2"),
    ("\\boxed{\\frac{1}{3}\\pi r^2 h}", "\\frac{\\pi r^2}{3}"),
    # up to three letters right after the digits that name no unit are variables: 2xy is 2xy
    ("\\boxed{2xy}", "2"),
    ("\\boxed{3ab^2}", "3"),
    ("\\boxed{4mn}", "4"),
    ("\\boxed{2}", "2xy"),
]


# a time of day on the 12-hour and the 24-hour clock; a bare time from 1:00 to 12:59 may be
# either (a gold "3:00" does not say which half of the day it means)
CLOCK = [
    ("\\boxed{3:00 \\text{ PM}}", "15:00", True),
    ("\\boxed{15:00}", "3:00 PM", True),
    ("\\boxed{3 PM}", "15:00", True),
    ("\\boxed{3:30 p.m.}", "15:30", True),
    ("\\boxed{12:30 AM}", "00:30", True),
    ("\\boxed{12:30 PM}", "12:30", True),
    ("\\boxed{\\text{noon}}", "12:00 PM", True),
    ("\\boxed{12:00}", "noon", True),
    ("\\boxed{\\text{midnight}}", "12:00 AM", True),
    ("\\boxed{\\text{midnight}}", "0:00", True),
    ("\\boxed{\\text{12 noon}}", "12:00 p.m.", True),
    ("\\boxed{3:00 PM}", "3:00 AM", False),
    ("\\boxed{3:00 AM}", "15:00", False),
    ("\\boxed{12:00 AM}", "noon", False),
    ("\\boxed{\\text{midnight}}", "12:00 PM", False),
    ("\\boxed{15:00}", "3:00", False),
    ("\\boxed{3 PM}", "16:00", False),
    ("\\boxed{3:00\\,\\text{p.m.}}", "15:00", True),
    ("\\boxed{9:45 AM}", "09:45", True),
    ("\\boxed{9:45 PM}", "09:45", False),                  # a zero-padded hour: 24-hour clock
    ("\\boxed{3 o'clock}", "3:00", True),                  # o'clock is a full hour
    ("The answer is 3 o’clock.", "3:00 PM", True),
    ("\\boxed{3 o'clock p.m.}", "15:00", True),
    ("\\boxed{4 o'clock}", "3:00", False),
    ("\\boxed{3 o'clock p.m.}", "3:00 AM", False),
    ("\\boxed{3 o'clock}", "15:00", False),               # a bare hour is not after 12:59
]
# one amount in two units of one dimension, converted exactly where the gold names a unit
CONVERTED = [
    ("\\boxed{12 \\text{ cm}}", "0.12 \\text{ m}", True),
    ("\\boxed{0.12 m}", "12 cm", True),
    ("\\boxed{1.5 kg}", "1500 g", True),
    ("\\boxed{1500 g}", "1.5 \\text{ kg}", True),
    ("\\boxed{2 h}", "120 \\text{ minutes}", True),
    ("\\boxed{90 \\text{ seconds}}", "1.5 minutes", True),
    ("\\boxed{1.2 km}", "1200 m", True),
    ("\\boxed{500 ml}", "0.5 l", True),
    ("\\boxed{1 \\text{ m}^2}", "10000 \\text{ cm}^2", True),
    ("\\boxed{\\$2.50}", "250 cents", True),
    ("\\boxed{5¢}", "\\$0.05", True),
    ("\\boxed{50 ¢}", "0.50 \\text{ dollars}", True),
    ("\\boxed{\\$0.05}", "5¢", True),
    ("\\boxed{5\\text{¢}}", "5 cents", True),
    ("\\boxed{5\\textcent}", "5 cents", True),
    ("\\boxed{12 cm}", "0.12", False),
    ("\\boxed{12 cm}", "12 m", False),
    ("\\boxed{1.5 kg}", "1500 m", False),
    ("\\boxed{1.2 km}", "1201 m", False),
    ("\\boxed{1 \\text{ m}^2}", "100 \\text{ cm}^2", False),
    ("\\boxed{1 \\text{ m}}", "100 \\text{ cm}^2", False),
    ("\\boxed{5 cm}", "2 in", False),                      # no exact conversion here
    # any SI prefix on any SI symbol, one rule (the bare symbol stays on its number: "5 N")
    ("\\boxed{5000 \\text{ J}}", "5 \\text{ kJ}", True),
    ("\\boxed{5 kJ}", "5000 J", True),
    ("\\boxed{2 \\text{ kW}}", "2000 \\text{ W}", True),
    ("\\boxed{3 mA}", "0.003 A", True),
    ("\\boxed{250 \\text{ mV}}", "0.25 \\text{ V}", True),
    ("\\boxed{2 \\text{ MW}}", "2000 \\text{ kW}", True),
    ("\\boxed{1.5 \\text{ kPa}}", "1500 \\text{ Pa}", True),
    ("\\boxed{2 \\text{ GHz}}", "2000 \\text{ MHz}", True),
    ("\\boxed{3 \\text{ ms}}", "0.003 \\text{ s}", True),
    ("\\boxed{5 \\mu\\text{m}}", "0.005 \\text{ mm}", True),
    ("\\boxed{5 \\text{ kWh}}", "5000 \\text{ Wh}", True),
    ("\\boxed{5 \\text{ kJ}}", "500 \\text{ J}", False),
    ("\\boxed{3 \\text{ mA}}", "3 \\text{ A}", False),
    ("\\boxed{5 \\text{ kJ}}", "5000 \\text{ W}", False),    # two dimensions
    ("\\boxed{5 \\text{ kWh}}", "18000000 \\text{ J}", False),  # two names of one quantity
    ("\\boxed{5 kilojoules}", "5000 J", True),                 # the prefix and unit named
    ("\\boxed{3 \\text{ milliamps}}", "0.003 A", True),
    ("\\boxed{\\SI{5}{\\kilo\\joule}}", "5000 \\text{ J}", True),    # siunitx's unit macros
    ("\\boxed{\\qty{5}{\\centi\\metre}}", "0.05 m", True),
    ("\\boxed{5 joules}", "5 J", True),                        # one unit in two spellings
    ("\\boxed{5 N}", "5 \\text{ newtons}", True),
    ("\\boxed{5 \\text{ amps}}", "5 A", True),
    ("\\boxed{5 kilojoules}", "500 J", False),
    ("\\boxed{5 kilos}", "5 kg", True),                      # not kilo-seconds: a word as a whole
    ("\\boxed{6 joules}", "5 J", False),
    ("\\boxed{5 kilovolts}", "5000 watts", False),
    ("\\boxed{1 \\text{ Mg}}", "1000 \\text{ kg}", True),       # M is mega, m milli
    ("\\boxed{5 \\text{ mL}}", "5 \\text{ ml}", True),
    ("\\boxed{5 \\text{ pA}}", "5 \\text{ Pa}", False),
    ("\\boxed{1 \\text{ Mg}}", "1000 \\text{ g}", False),
    ("\\boxed{1\\text{ nm}}", "10^{-9} \\text{ m}", True),      # a unit after a power or fraction
    ("\\boxed{5 \\text{ mm}}", "\\frac{1}{2} \\text{ cm}", True),
    ("\\boxed{4 \\text{ mm}}", "\\frac{1}{2} \\text{ cm}", False),
    # the ohm in any spelling, with any prefix
    ("\\boxed{5 k\\Omega}", "5000 \\Omega", True),
    ("\\boxed{5 kΩ}", "5 k\\Omega", True),
    ("\\boxed{5 \\text{ k}\\Omega}", "5000 \\text{ ohms}", True),
    ("\\boxed{2 M\\Omega}", "2000 k\\Omega", True),
    ("\\boxed{5 \\text{ kilohms}}", "5000\\,\\Omega", True),
    ("\\boxed{5\\,\\mathrm{k\\Omega}}", "5000 Ω", True),
    ("\\boxed{5 k\\Omega}", "5 \\Omega", False),
    ("\\boxed{5 M\\Omega}", "5000 \\Omega", False),
    ("\\boxed{5 \\Omega}", "5 \\text{ V}", False),
]


def test_a_time_of_day_on_either_clock():
    check(CLOCK)


def test_units_of_one_dimension_are_converted():
    check(CONVERTED)


def test_a_unit_in_chinese_after_the_number():
    check([
        ("\\boxed{12\\text{元}}", "12", True),
        ("\\boxed{12 \\text{个}}", "12", True),
        ("\\boxed{12}", "12元", True),
        ("\\boxed{13}", "12元", False),
        ("\\boxed{12\\text{元}}", "13", False),
    ])


def test_units_and_words_in_the_gold():
    check([(c, g, True) for c, g in UNITS] + [(c, g, False) for c, g in UNIT_NEAR_MISSES])


# ---------------------------------------------------------------- one quantity in several units

# "3 hours and 20 minutes" is one amount, never the list 3, 20: it equals another spelling of that
# amount, and a bare number read in its smallest or its largest unit (200 minutes, 10/3 hours)
COMPOUND = [
    ("\\boxed{3 \\text{ hours and } 20 \\text{ minutes}}", "200", True),
    ("The answer is 3 hours and 20 minutes.", "200", True),
    ("\\boxed{3\\text{ h } 20\\text{ min}}", "200 \\text{ minutes}", True),
    ("\\boxed{200 \\text{ minutes}}", "3 \\text{ hours } 20 \\text{ minutes}", True),
    ("\\boxed{1 \\text{ hour and } 30 \\text{ minutes}}", "1.5", True),
    ("\\boxed{2 \\text{ minutes } 30 \\text{ seconds}}", "150", True),
    ("\\boxed{5 \\text{ feet } 6 \\text{ inches}}", "66", True),
    ("\\boxed{5 \\text{ ft } 6 \\text{ in}}", "5.5 \\text{ feet}", True),
    ("\\boxed{3 \\text{ dollars and } 20 \\text{ cents}}", "\\$3.20", True),
    ("\\boxed{2 \\text{ kg } 300 \\text{ g}}", "2300", True),
    ("\\boxed{3 \\text{ hours and } 20 \\text{ minutes}}", "3, 20", False),
    ("\\boxed{3 \\text{ hours and } 20 \\text{ minutes}}", "320", False),
    ("\\boxed{3 \\text{ hours and } 20 \\text{ minutes}}", "201", False),
    ("\\boxed{3 \\text{ hours and } 20 \\text{ minutes}}", "200 \\text{ seconds}", False),
    ("\\boxed{3 \\text{ hours and } 20 \\text{ minutes}}", "12000", False),
    ("\\boxed{3 \\text{ hours or } 20 \\text{ minutes}}", "200", False),
    ("\\boxed{20 \\text{ minutes and } 3 \\text{ hours}}", "200", False),
    ("\\boxed{3 \\text{ hours}}", "3 \\text{ hours } 20 \\text{ minutes}", False),
    ("\\boxed{5 \\text{ feet } 6 \\text{ inches}}", "5.5 \\text{ m}", False),
    ("\\boxed{3 \\text{ apples and } 20 \\text{ pears}}", "23", False),
    # m beside hours or seconds is minutes ("2h 30m"); beside cm it is metres
    ("\\boxed{2h 30m}", "2.5 \\text{ hours}", True),
    ("\\boxed{2h 30m}", "150", True),
    ("\\boxed{5m 20s}", "320 \\text{ seconds}", True),
    ("\\boxed{1h 5m 10s}", "3910 s", True),
    ("\\boxed{2 m 30 cm}", "230 cm", True),
    ("\\boxed{2h 30m}", "2 h 20 min", False),
    ("\\boxed{2h 30m}", "230", False),
    ("\\boxed{2 m 30 cm}", "2.5 \\text{ hours}", False),
]


def test_one_quantity_in_several_units():
    check(COMPOUND)


# ---------------------------------------------------------------- radicals

RADICALS = [
    ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"),
    ("\\boxed{2\\sqrt2}", "\\sqrt{8}"),
    ("\\boxed{\\frac{\\sqrt{6}}{2}}", "\\sqrt{3/2}"),
    ("\\boxed{\\sqrt{\\frac{3}{2}}}", "\\frac{\\sqrt6}{2}"),
    ("\\boxed{\\sqrt{1.5}}", "\\frac{\\sqrt{6}}{2}"),
    ("\\boxed{sqrt(8)}", "2\\sqrt{2}"),
    ("\\boxed{2 sqrt(2)}", "\\sqrt8"),
    ("\\boxed{2 sqrt 2}", "\\sqrt8"),
    ("The answer is 2√2.", "\\sqrt{8}"),
    ("\\boxed{\\sqrt[3]{16}}", "2\\sqrt[3]{2}"),
    ("\\boxed{\\frac{1}{\\sqrt2}}", "\\frac{\\sqrt2}{2}"),
    ("\\boxed{\\frac{2}{\\sqrt{2}}}", "\\sqrt{2}"),
    ("\\boxed{\\sqrt{12} + \\sqrt{27}}", "5\\sqrt3"),
    ("\\boxed{\\frac{1}{\\sqrt{2}-1}}", "1+\\sqrt2"),
    ("\\boxed{2^{3/2}}", "2\\sqrt2"),
    ("\\boxed{\\sqrt{50}/5}", "\\sqrt{2}"),
    ("\\boxed{3\\sqrt{2}/\\sqrt{3}}", "\\sqrt{6}"),
    ("\\boxed{\\dfrac{\\sqrt{8}}{4}}", "\\frac{1}{\\sqrt{2}}"),
    ("\\boxed{\\sqrt{72}}", "6√2"),
    ("\\boxed{\\sqrt[4]{4}}", "\\sqrt2"),
    ("\\boxed{\\frac{\\sqrt{3}}{\\sqrt{2}}}", "\\sqrt{\\tfrac32}"),
    ("\\boxed{\\surd 2}", "\\sqrt2"),                           # plain TeX's root sign
    ("\\boxed{2\\surd{2}}", "\\sqrt8"),
]
RADICAL_NEAR_MISSES = [
    ("\\boxed{\\sqrt{8}}", "3\\sqrt{2}"),
    ("\\boxed{\\frac{\\sqrt6}{3}}", "\\sqrt{3/2}"),
    ("\\boxed{\\sqrt{2}}", "\\sqrt[3]{2}"),
    ("\\boxed{2\\sqrt{3}}", "\\sqrt{8}"),
    ("\\boxed{\\sqrt{12}}", "2\\sqrt{2}"),
    ("\\boxed{1+\\sqrt{2}}", "1-\\sqrt2"),
    ("\\boxed{\\sqrt{2}}", "1.41421356"),
    ("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt{2}}{2}"),
    ("\\boxed{\\surd 3}", "\\sqrt{2}"),
]


def test_radicals_equal_after_simplification():
    check([(c, g, True) for c, g in RADICALS] + [(c, g, False) for c, g in RADICAL_NEAR_MISSES])


def test_radicals_are_decided_in_process():
    v = mathcheck.radical_value
    assert v("\\sqrt{8}") == v("2\\sqrt{2}") == {(2, 2): 2}
    assert v("\\frac{\\sqrt{6}}{2}") == v("\\sqrt{3/2}") == v("\\sqrt{\\frac{3}{2}}")
    assert v("\\sqrt[6]{8}") == v("\\sqrt{2}")  # lowest terms: 8^(1/6) = 2^(1/2)
    assert v("\\sqrt[3]{-8}") == {(1, 1): -2}
    assert v("\\sqrt{-4}") is None and v("\\pi\\sqrt{2}") is None and v("x\\sqrt{2}") is None


# ---------------------------------------------------------------- intervals and inequalities

INTERVALS = [
    ("\\boxed{2 < x \\le 5}", "(2, 5]"),
    ("\\boxed{2<x<=5}", "(2,5]"),
    ("$\\boxed{2 < x \\leq 5}$", "(2,5]"),
    ("\\boxed{5 \\ge x > 2}", "(2, 5]"),
    ("\\boxed{\\{x \\mid 2 < x \\le 5\\}}", "(2,5]"),
    ("\\boxed{x \\in (2, 5]}", "2 < x \\le 5"),
    ("\\boxed{(2,5]}", "2<x\\le5"),
    ("\\boxed{x \\ge 3}", "[3, \\infty)"),
    ("\\boxed{x \\geq 3}", "[3,\\infty)"),
    ("\\boxed{3 \\le x}", "[3,\\infty)"),
    ("\\boxed{x < 1 \\text{ or } x > 3}", "(-\\infty, 1) \\cup (3, \\infty)"),
    ("\\boxed{x<1 \\text{ or } x>3}", "(-\\infty,1)\\cup(3,\\infty)"),
    ("\\boxed{(-\\infty, 1) \\cup (3, \\infty)}", "x < 1 \\text{ or } x > 3"),
    ("\\boxed{x \\le 4}", "(-\\infty, 4]"),
    ("\\boxed{(-3, 3)}", "|x| < 3"),
    ("\\boxed{[-2, -1] \\cup [1, 2]}", "1 \\le |z| \\le 2"),
    ("\\boxed{-\\infty < x < \\infty}", "\\mathbb{R}"),
    ("\\boxed{\\frac{1}{2} < x < 3}", "\\left(\\frac12, 3\\right)"),
    ("\\boxed{0.5 < x < 3}", "(\\frac{1}{2},3)"),
    # a union is unordered, and \mathbb{R} is (-\infty, \infty) however the other side reads
    ("\\boxed{(3, 4) \\cup (1, 2)}", "(1,2)\\cup(3,4)"),
    ("\\boxed{[3, 4] \\cup (-\\infty, 2)}", "(-\\infty,2)\\cup[3,4]"),
    ("\\boxed{(-\\infty, \\infty)}", "\\mathbb{R}"),
    ("\\boxed{\\mathbb{R}}", "(-\\infty,\\infty)"),
    ("\\boxed{x \\in \\mathbb{R}}", "(-\\infty,\\infty)"),
    ("\\boxed{\\Bbb{R}}", "(-\\infty,\\infty)"),                   # plain TeX
    ("\\boxed{\\text{all reals}}", "\\mathbb{R}"),
    # French brackets: one turned away from its endpoint is open
    ("\\boxed{]2, 5]}", "(2, 5]"),
    ("\\boxed{]2, 5[}", "(2, 5)"),
    ("\\boxed{[2, 5[}", "[2, 5)"),
    ("\\boxed{x \\in \\left]2, 5\\right]}", "2 < x \\le 5"),
    ("\\boxed{]-\\infty, 1[ \\cup ]3, +\\infty[}", "x < 1 \\text{ or } x > 3"),
    ("\\boxed{(2, 5]}", "]2, 5]"),
    # the reals without some points
    ("\\boxed{\\mathbb{R} \\setminus \\{3\\}}", "(-\\infty,3)\\cup(3,\\infty)"),
    ("\\boxed{x \\neq 3}", "\\mathbb{R}\\setminus\\{3\\}"),
    ("\\boxed{(-\\infty,3)\\cup(3,\\infty)}", "\\mathbb{R} - \\{3\\}"),
    ("\\boxed{\\mathbb{R}\\setminus\\{3, 1\\}}", "(-\\infty,1)\\cup(1,3)\\cup(3,\\infty)"),
    # ... or without an interval; two rays apart by a comma that never meet are their union
    ("\\boxed{\\mathbb{R}\\setminus[-1,1]}", "(-\\infty, -1) \\cup (1, \\infty)"),
    ("\\boxed{\\mathbb{R} \\backslash (-1, 1]}", "(-\\infty, -1] \\cup (1, \\infty)"),
    ("\\boxed{(-\\infty,2)\\cup[5,\\infty)}", "\\mathbb{R}\\setminus[2,5)"),
    ("\\boxed{x<-1, x>1}", "(-\\infty, -1) \\cup (1, \\infty)"),
    ("\\boxed{x \\ge 3, x \\le 1}", "x \\le 1 \\text{ or } x \\ge 3"),
    # set-builder notation that names the reals
    ("\\boxed{\\{x \\in \\mathbb{R} : x > 2\\}}", "(2, \\infty)"),
    ("\\boxed{\\{x\\in\\mathbb{R}\\mid -1<x<1\\}}", "(-1,1)"),
    ("\\boxed{(2,\\infty)}", "\\{x \\in \\mathbb{R} \\mid x > 2\\}"),
    ("\\boxed{\\{x \\in ℝ : x ≥ 2\\}}", "[2,\\infty)"),
    ("\\boxed{x \\geq 3, x \\in \\mathbb{R}}", "[3,\\infty)"),   # the domain said after it
    ("\\boxed{x < 1 \\text{ or } x > 3, x \\in ℝ}", "(-\\infty,1)\\cup(3,\\infty)"),
    # a capital U between two intervals is their union
    ("\\boxed{(-\\infty, 2) U (3, \\infty)}", "(-\\infty,2)\\cup(3,\\infty)"),
    ("\\boxed{(-inf, 2) U [3, inf)}", "(-\\infty,2)\\cup[3,\\infty)"),
    ("\\boxed{(-\\infty, 2) \\text{ U } (3, \\infty)}", "x<2 \\text{ or } x>3"),
]
INTERVAL_NEAR_MISSES = [
    ("\\boxed{x \\geq 3, y \\in \\mathbb{R}}", "[3,\\infty)"),       # another variable
    ("\\boxed{x > 3, x \\in \\mathbb{R}}", "[3,\\infty)"),
    ("\\boxed{\\{x \\in \\mathbb{R} : x > 2\\}}", "[2, \\infty)"),
    ("\\boxed{\\{x \\in \\mathbb{Z} : x > 2\\}}", "(2, \\infty)"),   # integers: no interval
    ("\\boxed{2 \\le x \\le 5}", "(2, 5]"),
    ("\\boxed{2 < x < 5}", "(2, 5]"),
    ("\\boxed{2 < x \\le 6}", "(2, 5]"),
    ("\\boxed{x > 2}", "(2, 5]"),
    ("\\boxed{x<1 \\text{ or } x>3}", "(-\\infty,1]\\cup(3,\\infty)"),
    ("\\boxed{x \\ge 3}", "(3,\\infty)"),
    ("\\boxed{2<y\\le5}", "2<x\\le5"),
    ("\\boxed{x < 1}", "(-\\infty, 1) \\cup (3, \\infty)"),
    ("\\boxed{(-3, 3]}", "|x| < 3"),
    ("\\boxed{x > 3}", "x < 3"),
    ("\\boxed{x < 1 \\text{ or } x > 3}", "1 < x < 3"),
    ("\\boxed{(3, 4] \\cup (1, 2)}", "(1,2)\\cup(3,4)"),
    ("\\boxed{(3, 4) \\cup (1, 2) \\cup (5, 6)}", "(1,2)\\cup(3,4)"),
    ("\\boxed{(0, \\infty)}", "\\mathbb{R}"),
    ("\\boxed{\\mathbb{R}}", "(-\\infty,0)\\cup(0,\\infty)"),
    ("\\boxed{]2, 5]}", "[2, 5]"),
    ("\\boxed{]2, 5[}", "(2, 5]"),
    ("\\boxed{[2, 5]}", "[2, 5["),
    ("\\boxed{\\mathbb{R}\\setminus\\{2\\}}", "\\mathbb{R}\\setminus\\{3\\}"),
    ("\\boxed{\\mathbb{R}\\setminus\\{3\\}}", "(-\\infty,3]\\cup(3,\\infty)"),
    ("\\boxed{\\mathbb{R}\\setminus\\{3\\}}", "\\mathbb{R}"),
    ("\\boxed{\\mathbb{R}\\setminus\\{3\\}}", "x \\ne 1"),
    ("\\boxed{\\mathbb{R}\\setminus(-1,1)}", "(-\\infty, -1) \\cup (1, \\infty)"),
    ("\\boxed{\\mathbb{R}\\setminus[-1,1]}", "(-\\infty, -1] \\cup [1, \\infty)"),
    ("\\boxed{\\mathbb{R}\\setminus[-1,1]}", "[-1, 1]"),
    ("\\boxed{x<-1, x>1}", "(-1, 1)"),
    ("\\boxed{x > 1, x < 3}", "(-\\infty, 1) \\cup (3, \\infty)"),   # rays that meet: both hold
    ("\\boxed{x<-1, y>1}", "(-\\infty, -1) \\cup (1, \\infty)"),
    ("\\boxed{(-\\infty, 2] U (3, \\infty)}", "(-\\infty,2)\\cup(3,\\infty)"),
    ("\\boxed{(-\\infty, 2) U (4, \\infty)}", "(-\\infty,2)\\cup(3,\\infty)"),
]


INFINITY_AND_REALS_IN_WORDS = [  # \\infty and \\mathbb{R} said in words or in code
    ("\\boxed{\\text{Infinity}}", "\\infty", True),
    ("\\boxed{inf}", "\\infty", True),
    ("\\boxed{-inf}", "-\\infty", True),
    ("\\boxed{oo}", "\\infty", True),                   # sympy
    ("\\boxed{\\text{negative infinity}}", "-\\infty", True),
    ("\\boxed{(-inf, 3)}", "(-\\infty, 3)", True),
    ("\\boxed{\\text{infinitely many}}", "\\infty", True),
    ("\\boxed{\\text{infinitely many solutions}}", "\\infty", True),
    ("\\boxed{\\text{infinite}}", "\\infty", True),
    ("\\boxed{\\infty}", "\\text{infinitely many}", True),
    ("\\boxed{\\text{All real numbers}}", "\\mathbb{R}", True),
    ("\\boxed{\\text{all real } x}", "\\mathbb{R}", True),
    ("\\boxed{\\text{any real value of } x}", "(-\\infty, \\infty)", True),
    ("\\boxed{\\mathbb{R}}", "\\text{all real numbers}", True),
    ("\\boxed{\\text{negative infinity}}", "\\infty", False),
    ("\\boxed{-inf}", "\\infty", False),
    ("\\boxed{\\text{infinitely many}}", "-\\infty", False),
    ("\\boxed{\\text{infinitely many}}", "0", False),
    ("\\boxed{\\text{all real } x}", "(0, \\infty)", False),
    ("\\boxed{\\text{all positive reals}}", "\\mathbb{R}", False),
    ("\\boxed{\\text{info}}", "\\infty", False),
    # the other sets of numbers in words: integers, rationals, complex numbers
    ("\\boxed{\\mathbb{Z}}", "\\text{all integers}", True),
    ("\\boxed{\\text{the rational numbers}}", "\\mathbb{Q}", True),
    ("\\boxed{\\text{all complex numbers}}", "\\mathbb{C}", True),
    ("\\boxed{\\text{all integers}}", "\\mathbb{R}", False),
    ("\\boxed{\\mathbb{Z}}", "\\text{rational numbers}", False),
    ("\\boxed{\\text{positive integers}}", "\\mathbb{Z}", False),
]


def test_infinity_and_the_reals_in_words():
    check(INFINITY_AND_REALS_IN_WORDS)


def test_intervals_equal_inequalities():
    check([(c, g, True) for c, g in INTERVALS] + [(c, g, False) for c, g in INTERVAL_NEAR_MISSES])


# ---------------------------------------------------------------- the empty set

EMPTY = [
    ("\\boxed{\\varnothing}", "\\emptyset"),
    ("\\boxed{\\{\\}}", "\\emptyset"),
    ("\\boxed{\\{ \\}}", "\\emptyset"),
    ("\\boxed{\\left\\{ \\right\\}}", "\\emptyset"),
    ("\\boxed{∅}", "\\emptyset"),
    ("\\boxed{\\text{no solution}}", "\\emptyset"),
    ("\\boxed{\\text{No solutions}}", "\\varnothing"),
    ("\\boxed{\\text{There are no real solutions}}", "\\emptyset"),
    ("\\boxed{\\text{None}}", "\\emptyset"),
    ("The answer is none.", "\\emptyset"),
    ("\\boxed{\\emptyset}", "\\text{no solution}"),
    ("The answer is: no solution.", "\\{\\}"),
    ("\\boxed{\\emptyset}", "\\varnothing"),
]
EMPTY_NEAR_MISSES = [
    ("\\boxed{\\{0\\}}", "\\emptyset"),
    ("\\boxed{0}", "\\emptyset"),
    ("\\boxed{\\{\\emptyset\\}}", "\\emptyset"),
    ("\\boxed{\\mathbb{R}}", "\\emptyset"),
    ("\\boxed{\\text{infinitely many solutions}}", "\\emptyset"),
    ("\\boxed{\\{1\\}}", "\\emptyset"),
    ("\\boxed{\\emptyset}", "\\{1\\}"),
    ("\\boxed{\\text{none}}", "0"),
]


def test_empty_set_synonyms():
    check([(c, g, True) for c, g in EMPTY] + [(c, g, False) for c, g in EMPTY_NEAR_MISSES])


def test_does_not_exist_is_dne_and_neither_undefined_nor_the_empty_set():
    check([
        ("\\boxed{\\text{does not exist}}", "DNE", True),
        ("\\boxed{\\text{DNE}}", "\\text{does not exist}", True),
        ("The limit doesn't exist, so the answer is: does not exist.", "\\text{DNE}", True),
        ("\\boxed{\\text{undefined}}", "DNE", False),
        ("\\boxed{\\text{no solution}}", "DNE", False),
        ("\\boxed{\\emptyset}", "DNE", False),
        ("\\boxed{\\text{DNE}}", "\\emptyset", False),
        ("\\boxed{0}", "DNE", False),
    ])


def test_unions_of_sets_and_of_intervals_are_merged():
    check([
        ("\\boxed{\\{1,2\\}\\cup\\{3\\}}", "\\{1,2,3\\}", True),
        ("\\boxed{\\{3\\} \\cup \\{1, 2\\}}", "\\{1,2,3\\}", True),
        ("\\boxed{[1,2]\\cup[2,3]}", "[1,3]", True),
        ("\\boxed{[1,2)\\cup[2,3]}", "[1,3]", True),
        ("\\boxed{[1,3]}", "[1,2]\\cup(2,3]", True),
        ("\\boxed{(-\\infty,1]\\cup[1,\\infty)}", "\\mathbb{R}", True),
        ("\\boxed{(0,2)\\cup(1,3)\\cup(5,6)}", "(0,3)\\cup(5,6)", True),
        ("\\boxed{\\{1,2\\}\\cup\\{4\\}}", "\\{1,2,3\\}", False),
        ("\\boxed{(1,2)\\cup(2,3)}", "(1,3)", False),            # 2 is left out
        ("\\boxed{(-\\infty,1)\\cup(1,\\infty)}", "\\mathbb{R}", False),
        ("\\boxed{[1,2]\\cup[3,4]}", "[1,4]", False),
        ("\\boxed{[1,2]\\cup[2,3]}", "[1,3)", False),
    ])


def test_a_system_in_a_left_brace_array_is_its_solution():
    A = "\\left\\{\\begin{array}{l} x=%s \\\\ y=%s \\end{array}\\right."
    check([
        ("\\boxed{" + A % (1, 2) + "}", "(1, 2)", True),
        ("\\boxed{" + A % (1, 2) + "}", "x=1, y=2", True),
        ("$" + A % (1, 2) + "$ is the answer. \\boxed{" + A % (1, 2) + "}", "(1,2)", True),
        ("\\boxed{\\left\\{\\begin{aligned} x&=1 \\\\ y&=2 \\end{aligned}\\right.}", "(1,2)", True),
        ("\\boxed{" + A % (2, 1) + "}", "(1, 2)", False),
        ("\\boxed{" + A % (1, 3) + "}", "x=1, y=2", False),
        # an array without the brace is a matrix or a vector, as before
        ("\\boxed{\\begin{array}{c} 1 \\\\ 2 \\end{array}}", "(1, 2)", True),
    ])


# ---------------------------------------------------------------- vectors

# a vector, one row or one column of a matrix environment, is the tuple of its entries (MATH's
# precalculus golds are pmatrix columns; models also write (1, 2) or \\langle 1, 2 \\rangle); a
# matrix with several rows and columns is no tuple
P, E = "\\begin{pmatrix}", "\\end{pmatrix}"
VECTORS = [
    ("\\boxed{(1, 2)}", P + "1 \\\\ 2" + E, True),
    ("\\boxed{" + P + "1 \\\\ 2" + E + "}", "(1,2)", True),
    ("\\boxed{\\langle 1, 2, 3 \\rangle}", P + "1\\\\2\\\\3" + E, True),
    ("\\boxed{" + P + "1 & 2" + E + "}", "(1,2)", True),
    ("\\boxed{(\\frac{1}{2}, -1)}", "\\begin{bmatrix}0.5\\\\-1\\end{bmatrix}", True),
    ("\\boxed{\\mathbf{v} = " + P + "2\\\\-1" + E + "}", "(2,-1)", True),
    ("\\boxed{(2, 1)}", P + "1 \\\\ 2" + E, False),
    ("\\boxed{(1, 2)}", P + "1 \\\\ 2 \\\\ 3" + E, False),
    ("\\boxed{(1, 2, 3, 4)}", P + "1 & 2 \\\\ 3 & 4" + E, False),
    ("\\boxed{\\{1, 2\\}}", P + "1 \\\\ 2" + E, False),
    ("\\boxed{[1, 2]}", P + "1 \\\\ 2" + E, False),
]


VECTORS += [  # a decorated name on the left, as a plain one: "\\vec{v} =", "\\overrightarrow{AB} ="
    ("\\boxed{\\vec{v} = (1,2)}", "(1,2)", True),
    ("\\boxed{\\overrightarrow{AB} = (1,2)}", "(1,2)", True),
    ("\\boxed{\\vec{v} = (1,2)}", "(2,1)", False),
]
VECTORS += [  # a sum of multiples of the unit vectors: the tuple of its components
    ("\\boxed{\\mathbf{i} + 2\\mathbf{j} + 3\\mathbf{k}}", "(1,2,3)", True),
    ("\\boxed{3\\hat{i} - 4\\hat{j}}", "\\langle 3, -4 \\rangle", True),
    ("\\boxed{-\\frac{1}{2}\\mathbf{i} + \\mathbf{k}}", P + "-0.5 \\\\ 0 \\\\ 1" + E, True),
    ("\\boxed{\\mathbf{i} + 2\\mathbf{j} + 3\\mathbf{k}}", "(3,2,1)", False),
    ("\\boxed{3\\hat{i} + 4\\hat{j}}", "(3, -4)", False),
    ("\\boxed{\\sqrt{-4}}", "2i", True),                          # one term: the imaginary unit
]
VECTORS += [  # a matrix written as nested lists (code, JSON): its rows
    ("\\boxed{[[1, 2], [3, 4]]}", P + "1 & 2 \\\\ 3 & 4" + E, True),
    ("\\boxed{" + P + "1 & 2 \\\\ 3 & 4" + E + "}", "[[1,2],[3,4]]", True),
    ("\\boxed{[[1], [2]]}", "(1, 2)", True),                       # a column: a vector
    ("\\boxed{[[1, 2], [3, 5]]}", P + "1 & 2 \\\\ 3 & 4" + E, False),
    ("\\boxed{[[1, 3], [2, 4]]}", P + "1 & 2 \\\\ 3 & 4" + E, False),   # the transpose
    ("\\boxed{[[1, 2], [3]]}", P + "1 & 2 \\\\ 3 & 0" + E, False),
]
VM = "\\begin{vmatrix} 1 & 2 \\\\ 3 & 4 \\end{vmatrix}"
VECTORS += [  # bars are no brackets: a vmatrix is the determinant, a number, not the matrix
    ("\\boxed{" + VM + "}", "-2", True),
    ("\\boxed{" + VM + "}", P + "1 & 2 \\\\ 3 & 4" + E, False),
    ("\\boxed{" + P + "1 & 2 \\\\ 3 & 4" + E + "}", VM, False),
    ("\\boxed{" + VM + "}", "2", False),
]


def test_a_vector_equals_the_tuple_of_its_entries():
    check(VECTORS)


# a system's solution written as a "cases" system or as a one-element solution set is that pair
SYSTEMS = [
    ("\\boxed{\\begin{cases} x = 1 \\\\ y = 2 \\end{cases}}", "(1,2)", True),
    ("\\boxed{(-2, 3)}", "\\{(-2,3)\\}", True),
    ("\\boxed{\\{(-2, 3)\\}}", "(-2,3)", True),
    ("\\boxed{\\begin{cases} x = 1 \\\\ y = 2 \\end{cases}}", "(2,1)", False),
    ("\\boxed{\\{(-2, 3)\\}}", "(3,-2)", False),
    ("\\boxed{(-2, 3)}", "\\{(-2,3),(1,1)\\}", False),
    ("\\boxed{(-2, 3)}", "\\{-2,3\\}", False),
]


def test_a_system_s_solution_as_cases_or_a_one_element_set():
    check(SYSTEMS)


def test_percent_inside_text_and_lg():
    check([
        ("\\boxed{\\text{25\\%}}", "25\\%", True),
        ("\\boxed{\\text{25\\%}}", "0.25", True),
        ("\\boxed{\\text{25\\%}}", "0.025", False),
        ("\\boxed{\\lg 100}", "2", True),                  # lg is log base 10
        ("\\boxed{\\lg 2 + \\lg 5}", "1", True),
        ("\\boxed{\\lg 100}", "3", False),
    ])


# ---------------------------------------------------------------- tuples with named components

NAMED = [
    ("\\boxed{(p,q)=(3,2)}", "(3,2)"),
    ("\\boxed{(p, q) = (3, 2)}", "(3, 2)"),
    ("$\\boxed{(x,y) = (3,2)}$", "(3,2)"),
    ("\\boxed{p=3, q=2}", "(3,2)"),
    ("\\boxed{(3,2)}", "(p,q)=(3,2)"),
    ("\\boxed{p = 3, q = 2}", "(p,q)=(3,2)"),
    ("\\boxed{q = 2, p = 3}", "(p,q)=(3,2)"),
    ("\\boxed{(a,b,c) = (1,2,3)}", "(1,2,3)"),
    ("\\boxed{(x, y) = (5, 8) \\quad \\text{and} \\quad (8, 5)}", "(5, 8), (8, 5)"),
    ("The answer is $(p, q) = (3, 2)$.", "(3,2)"),
    ("\\boxed{(m,n)=(3,2)}", "(p, q) = (3, 2)"),
    # a probability or an expectation of any event is a name too
    ("\\boxed{P(A \\cap B) = 0.5}", "0.5"),
    ("\\boxed{\\Pr(A) = 0.5}", "\\frac12"),
    ("\\boxed{\\mathbb{P}(X > 1) = 0.5}", "0.5"),
    ("\\boxed{\\mathbb{E}[X] = 3.5}", "\\frac72"),
    # the value on the left of its name
    ("\\boxed{5 = x}", "5"),
    ("Answer: $\\frac{1}{2} = p$", "0.5"),
    ("\\boxed{5 = x}", "x = 5"),
    ("\\boxed{x = 5}", "5 = x"),
    ("\\boxed{\\det A = -2}", "-2"),                    # a determinant is named too
    ("\\boxed{\\det(M) = 7}", "7"),
]
NAMED_NEAR_MISSES = [
    ("\\boxed{6 = x}", "5"),
    ("\\boxed{5 = y}", "x = 5"),
    ("\\boxed{5 = 2x}", "5"),                       # an equation, not a value
    ("\\boxed{(p,q)=(2,3)}", "(3,2)"),
    ("\\boxed{q=3, p=2}", "(p,q)=(3,2)"),
    ("\\boxed{(p,q)=(3,2,1)}", "(3,2)"),
    ("\\boxed{(3,2)}", "(p,q)=(2,3)"),
    ("\\boxed{p=2, q=3}", "(p,q)=(3,2)"),
    ("\\boxed{P(A \\cap B) = 0.6}", "0.5"),
    ("\\boxed{\\mathbb{E}[X] = 3.5}", "3"),
    ("\\boxed{\\det A = -2}", "2"),
]


def test_tuples_with_a_variable_prefix():
    check([(c, g, True) for c, g in NAMED] + [(c, g, False) for c, g in NAMED_NEAR_MISSES])


# ---------------------------------------------------------------- equations of one line or curve

EQUATIONS = [
    ("\\boxed{2x - y + 1 = 0}", "y = 2x + 1"),
    ("\\boxed{4x - 2y = -2}", "y = 2x + 1"),
    ("\\boxed{y - 1 = 2x}", "y=2x+1"),
    ("\\boxed{-2x + y = 1}", "y = 2x + 1"),
    ("\\boxed{2x + 1 = y}", "y=2x+1"),
    ("\\boxed{y = 2x + 1}", "2x - y + 1 = 0"),
    ("\\boxed{2x^2 + 2y^2 = 8}", "x^2 + y^2 = 4"),
    ("\\boxed{x^2+y^2-4=0}", "x^2+y^2=4"),
    ("\\boxed{y = 3 - \\frac{3}{4}x}", "3x + 4y = 12"),
    ("\\boxed{\\frac{x}{4} + \\frac{y}{3} = 1}", "3x+4y=12"),
    ("The equation of the line is $y = -\\frac{1}{2}x + \\frac{3}{4}$.", "2x+4y-3=0"),
    ("\\boxed{\\frac{x^2}{16} + \\frac{y^2}{12} = \\frac14}", "\\frac{x^2}{4}+\\frac{y^2}{3}=1"),
]
EQUATION_NEAR_MISSES = [
    ("\\boxed{y = 2x - 1}", "2x - y + 1 = 0"),
    ("\\boxed{y = 2x + 2}", "y = 2x + 1"),
    ("\\boxed{x^2+y^2=2}", "x^2+y^2=4"),
    ("\\boxed{y^2 = (2x+1)^2}", "y = 2x + 1"),
    ("\\boxed{z = 2x + 1}", "y = 2x + 1"),
    ("\\boxed{4x - 2y = 2}", "y = 2x + 1"),
    ("\\boxed{x + y = 1}", "x - y = 1"),
]


def test_equations_of_the_same_curve():
    check([(c, g, True) for c, g in EQUATIONS] + [(c, g, False) for c, g in EQUATION_NEAR_MISSES])


# ---------------------------------------------------------------- unordered collections of tuples

TUPLE_SETS = [
    ("\\boxed{\\{(1,2),(3,4)\\}}", "\\{(3,4),(1,2)\\}"),
    ("\\boxed{(3,4),(1,2)}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{(3, 4) \\text{ and } (1, 2)}", "\\{(1,2),(3,4)\\}"),
    ("$\\boxed{(3,4)}$, $\\boxed{(1,2)}$", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{\\{(3,4),(1,2)\\}}", "(1,2);(3,4)"),
    ("\\boxed{\\left\\{\\left(3,4\\right),\\left(1,2\\right)\\right\\}}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{(1, 2), (3, 4), (1, 2)}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{[(3,4),(1,2)]}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{(3,4)} \\text{ and } \\boxed{(1,2)}", "(1,2),(3,4)"),
    ("\\boxed{(x,y) \\in \\{(3,4),(1,2)\\}}", "(1,2),(3,4)"),
    ("\\boxed{(4, 0, 6), (0, -2, 0), (0, 0, 0)}", "(0;0;0),(0;-2;0),(4;0;6)"),
    ("\\boxed{(5,2),(7,2)}", "p=5,q=2;p=7,q=2"),
]
TUPLE_SET_NEAR_MISSES = [
    ("\\boxed{\\{(1,2),(4,3)\\}}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{\\{(1,2)\\}}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{\\{(1,2),(3,4),(5,6)\\}}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{\\{(2,1),(4,3)\\}}", "\\{(1,2),(3,4)\\}"),
    ("\\boxed{(1,2)}", "(1,2),(3,4)"),
]


def test_unordered_collections_of_tuples():
    check([(c, g, True) for c, g in TUPLE_SETS] + [(c, g, False) for c, g in TUPLE_SET_NEAR_MISSES])


# ---------------------------------------------------------------- counting, gcd and lcm, points

# C(10, 3), nCr and P(5, 2) spellings equal their value; "C(10, 3)" / "P(5, 2)" is also a point,
# so a tuple gold reads it as one; gcd / lcm of integers are evaluated (of letters: no answer)
COUNTING = [
    ("\\boxed{C(10,3)}", "120", True),
    ("\\boxed{C(10, 3)}", "\\binom{10}{3}", True),
    ("\\boxed{{}^{10}C_3}", "120", True),
    ("\\boxed{^{10}C_{3}}", "120", True),
    ("\\boxed{{}_{10}C_{3}}", "120", True),
    ("\\boxed{\\text{10C3}}", "120", True),
    ("\\boxed{P(5,2)}", "20", True),
    ("\\boxed{{}^5P_2}", "20", True),
    ("\\boxed{5P2}", "20", True),
    ("\\boxed{{}^{10}C_3 + 1}", "121", True),
    ("\\boxed{P(5,2)}", "(5,2)", True),
    ("The answer is $P(5,2)$.", "(5, 2)", True),
    ("\\boxed{(5,2)}", "P(5,2)", True),
    ("\\boxed{\\operatorname{lcm}(4,6)}", "12", True),
    ("\\boxed{\\text{LCM}[4, 6]}", "12", True),
    ("\\boxed{\\operatorname{gcd}(12,18)}", "6", True),
    ("\\boxed{2\\gcd(4,6)}", "4", True),
    ("\\boxed{C(10,3)}", "121", False),
    ("\\boxed{P(5,2)}", "10", False),
    ("\\boxed{C(3,10)}", "0", False),
    ("\\boxed{2^{10}C_3}", "120", False),          # 2^10 times C_3
    ("\\boxed{A(1,2)}", "(2,1)", False),
    ("\\boxed{20}", "P(5,2)", False),             # a point as the gold
    ("\\boxed{Q(5,2)}", "P(5,2)", False),
    ("\\boxed{\\operatorname{lcm}(4,6)}", "24", False),
    ("\\boxed{\\gcd(a,b)}", "1", False),            # sympy's gcd of two symbols is 1
    # Chinese and French textbooks: C_n^k and A_n^k (arrangements), read where the gold is a number
    ("\\boxed{C_{10}^{3}}", "120", True),
    ("\\boxed{\\mathrm{C}_{10}^3}", "\\binom{10}{3}", True),
    ("\\boxed{A_{5}^{2}}", "20", True),
    ("\\boxed{C_{10}^{3}}", "121", False),
    ("\\boxed{A_5^2}", "10", False),
    ("\\boxed{C_3^{10}}", "120", False),
]


def test_counting_notations_gcd_lcm_and_named_points():
    check(COUNTING)


# ---------------------------------------------------------------- more number spellings

NUMBER_SPELLINGS = [
    ("\\boxed{1.2 x 10^3}", "1200", True),         # an x between a number and 10^ is a times
    ("\\boxed{1.2 X 10^{-3}}", "0.0012", True),
    ("\\boxed{0.(3)}", "\\frac13", True),           # a repeating decimal in parentheses
    ("\\boxed{0.(142857)}", "\\frac17", True),
    ("\\boxed{0.1(6)}", "\\frac16", True),
    ("\\boxed{45^o}", "45", True),
    ("\\boxed{USD\\,5.50}", "5.5", True),
    ("\\boxed{((((5))))}", "5", True),            # grouping parentheses, however deep
    ("\\boxed{" + "(" * 20 + "5" + ")" * 20 + "}", "5", True),
    ("\\boxed{((1, 2))}", "(1,2)", True),
    ("\\boxed{2(3)}", "6", True),                 # a product
    ("\\boxed{x = 2 + 3 = 5}", "5", True),
    # a brace-less \\frac with a symbol command as an argument
    ("\\boxed{\\frac{1}{2}\\pi}", "\\frac\\pi2", True),
    ("\\boxed{\\frac{\\pi}{4}}", "\\dfrac\\pi4", True),
    ("\\boxed{\\frac{\\pi}{2}}", "\\frac\\pi{2}", True),
    ("\\boxed{\\frac{1}{\\pi}}", "\\frac1\\pi", True),
    ("\\boxed{\\frac{\\theta}{2}}", "\\tfrac\\theta2", True),
    ("\\boxed{\\frac{\\pi}{2}}", "\\dfrac\\pi4", False),
    ("\\boxed{\\frac{2}{\\pi}}", "\\frac\\pi2", False),
    ("\\boxed{1.2 x 10^3}", "120", False),
    ("\\boxed{2x10}", "20", False),
    ("\\boxed{0.(3)}", "0.3", False),
    ("\\boxed{x^o}", "x", False),
    ("\\boxed{((6))}", "5", False),
    ("\\boxed{((1, 2))}", "(2,1)", False),
    ("\\boxed{2(3)}", "5", False),                # math-verify's parser reads 2(3) as 2 + 3
    ("\\boxed{5(2)}", "7", False),
    ("\\boxed{x = 5 = 6}", "6", False),           # a chain that is false
    ("\\boxed{x = 5 = 6}", "5", False),
]


def test_a_prime_is_part_of_the_name():
    # math-verify's parser drops a prime: f'(x) read as f(x), y' as y, A' as A
    check([
        ("\\boxed{f'(x)}", "f(x)", False),
        ("\\boxed{f(x)}", "f'(x)", False),
        ("\\boxed{y'}", "y", False),
        ("\\boxed{y''}", "y'", False),
        ("\\boxed{A'}", "A", False),
        ("\\boxed{f'(2)}", "f(2)", False),
        ("\\boxed{f'(x)}", "f'(x)", True),
        ("\\boxed{f^{\\prime}(x)}", "f'(x)", True),
        ("\\boxed{f^{\\prime\\prime}(x)}", "f''(x)", True),
        ("\\boxed{f'(x) = 2x}", "2x", True),
        ("\\boxed{A'B'}", "A'B'", True),
    ])


def test_more_number_spellings():
    check(NUMBER_SPELLINGS)


HTML_ENTITIES = [  # answers copied out of a web page: character references with their ";"
    ("\\boxed{&minus;5}", "-5", True),
    ("Answer: &minus;5", "-5", True),
    ("Answer: &#8722;5", "-5", True),
    ("Answer: &#x2212;5", "-5", True),
    ("\\boxed{&frac12;}", "\\frac12", True),
    ("Answer: 1&frasl;2", "0.5", True),
    ("Answer: 5&nbsp;cm", "5", True),
    ("Answer: x &le; 3", "(-\\infty, 3]", True),
    ("Answer: x &lt; 3", "(-\\infty, 3)", True),
    ("Answer: 2&pi;", "2\\pi", True),
    ("Answer: 3 &times; 10<sup>3</sup>", "3000", True),
    ("Answer: &radic;2", "\\sqrt2", True),
    ("Answer: &minus;5", "5", False),
    ("Answer: x &gt; 3", "(-\\infty, 3)", False),
    ("\\boxed{\\begin{aligned} x &= 5 \\end{aligned}}", "5", True),   # "&=" aligns
]


def test_html_character_references():
    check(HTML_ENTITIES)


CALCULATOR_SPELLINGS = [  # answers written as in code or on a calculator
    ("\\boxed{2**10}", "1024", True),
    ("\\boxed{x**2 + 1}", "x^2+1", True),
    ("\\boxed{2^-1}", "0.5", True),
    ("\\boxed{pi/2}", "\\frac{\\pi}{2}", True),
    ("\\boxed{2*pi}", "2\\pi", True),
    ("\\boxed{ln(e^2)}", "2", True),
    ("\\boxed{log(8)/log(2)}", "3", True),
    ("\\boxed{e^(i*pi)}", "-1", True),
    ("\\boxed{2**11}", "1024", False),
    ("\\boxed{2^-2}", "0.5", False),
    ("\\boxed{pi/3}", "\\frac{\\pi}{2}", False),
    ("\\boxed{**5**}", "5", False),                # bold marks are no power
    ("\\boxed{\\text{spine}}", "spine", True),      # "pi" inside a word is no pi
    ("\\boxed{Pi}", "\\pi", True),                     # Mathematica, and pi in capitals
    ("\\boxed{PI/2}", "\\frac{\\pi}{2}", True),
    ("\\boxed{math.pi}", "\\pi", True),                # Python's names
    ("\\boxed{2*np.pi}", "2\\pi", True),
    ("\\boxed{math.pi/3}", "\\frac{\\pi}{2}", False),
    ("\\boxed{\\text{Spine}}", "spine", True),
    ("\\boxed{abs(-3)}", "3", True),
    ("\\boxed{pow(2, 10)}", "1024", True),
    ("\\boxed{abs(x - 1)}", "|x-1|", True),
    ("\\boxed{abs(-3)}", "-3", False),
    ("\\boxed{pow(2, 11)}", "1024", False),
    ("\\boxed{\\text{cabs}(3)}", "3", False),             # abs only as a word
    ("\\boxed{log_2(8)}", "3", True),                       # a base after log
    ("\\boxed{log2(8)}", "3", True),
    ("\\boxed{log10(1000)}", "3", True),
    ("\\boxed{log2(8)}", "4", False),
    ("\\boxed{5\\mathrm{E}{+}03}", "5000", True),           # the exponent's sign in braces
    ("\\boxed{5\\mathrm{e}{-}3}", "0.005", True),
    ("\\boxed{5\\mathrm{E}{+}03}", "500", False),
]


def test_calculator_and_code_spellings():
    check(CALCULATOR_SPELLINGS)


REPEATING_WITH_ELLIPSIS = [  # a block said again before "...": a repeating decimal
    ("\\boxed{0.333...}", "\\frac13", True),
    ("\\boxed{0.3333…}", "\\frac13", True),
    ("\\boxed{-0.333\\ldots}", "-\\frac13", True),
    ("\\boxed{0.1666\\ldots}", "\\frac16", True),
    ("\\boxed{0.1212\\dots}", "\\frac{4}{33}", True),
    ("\\boxed{0.142857142857\\ldots}", "\\frac17", True),
    ("\\boxed{0.333...}", "0.\\overline{3}", True),
    ("\\boxed{0.999...}", "1", True),
    ("\\boxed{0.666 \\ldots}", "\\frac23", True),
    ("\\boxed{0.33...}", "\\frac13", False),          # two digits: too short to say it repeats
    ("\\boxed{3.14159...}", "\\pi", False),
    ("\\boxed{0.125...}", "\\frac18", False),
    ("\\boxed{0.333...}", "0.333", False),
    ("\\boxed{0.1666\\ldots}", "0.1666", False),
]


def test_a_repeating_decimal_written_with_an_ellipsis():
    check(REPEATING_WITH_ELLIPSIS)


OTHER_DIGITS_AND_NOTATIONS = [
    ("\\boxed{٣٫٥}", "3.5", True),                     # the Arabic decimal separator
    ("\\boxed{١٬٢٣٤}", "1234", True),
    ("\\boxed{٣٫٥}", "35", False),
    ("\\boxed{٥٠٪}", "0.5", True),                       # the Arabic percent sign
    ("\\boxed{٥٠٪}", "50", True),
    ("\\boxed{٥٠٪}", "5", False),
    ("\\boxed{⑤}", "5", True),                          # a circled digit
    ("\\boxed{⑥}", "5", False),
    ("\\boxed{26_{10}}", "26", True),                   # base ten is the number itself
    ("\\boxed{26_{10}}", "27", False),
    ("\\boxed{26_{8}}", "26", False),
    ("\\boxed{2 \\mp \\sqrt{3}}", "2+\\sqrt3, 2-\\sqrt3", True),
    ("\\boxed{2 ∓ \\sqrt{3}}", "2+\\sqrt3, 2-\\sqrt3", True),
    ("\\boxed{2 \\mp \\sqrt{3}}", "2+\\sqrt3", False),
    ("\\boxed{[1, 2, 3]}", "(1, 2, 3)", True),          # a vector in brackets: no interval
    ("\\boxed{[1, 3, 2]}", "(1, 2, 3)", False),
    ("\\boxed{[1, 2]}", "(1, 2)", False),               # an interval: its brackets count
    ("\\boxed{[1, 2, 3)}", "(1, 2, 3)", False),          # no vector: mixed brackets
    ("\\boxed{4i + 3}", "3+4i", True),
    ("\\boxed{3 + 4j}", "3+4i", False),                  # j is a variable here
    ("\\boxed{-\\nicefrac{1}{2}}", "-0.5", True),
    ("\\boxed{\\nicefrac{1}{3}}", "0.5", False),
    ("\\boxed{minus 5}", "-5", True),
    ("\\boxed{\\text{negative } \\frac{1}{2}}", "-0.5", True),
    ("\\boxed{minus 5}", "5", False),
    ("\\boxed{5 minus 2}", "3", False),                 # words between numbers: no answer
    # a response cut off inside the box of its final statement has no answer
    ("So the answer is \\boxed{5", "5", False),
    ("The final answer is $\\boxed{\\frac{1}{2}", "\\frac12", False),
    ("Final Answer: \\boxed{5", "5", False),
    ("#### \\boxed{5", "5", False),
    ("The answer is $\\frac{1}{2", "\\frac12", False),      # cut off inside any brace
    ("Final answer: \\frac{1}{2", "\\frac12", False),
    ("The answer is \\{1, 2\\}", "\\{1, 2\\}", True),        # an escaped brace is no group
]


# a complex number in polar form: r cis(t) = r e^{i t} (t in radians); a function's argument in
# parentheses is no gloss
POLAR = [
    ("\\boxed{5e^{i\\pi/3}}", "5\\text{cis}(\\pi/3)", True),
    ("\\boxed{2\\operatorname{cis}\\frac{\\pi}{3}}", "1+\\sqrt3 i", True),
    ("\\boxed{\\sqrt{2}\\,\\mathrm{cis}(\\pi/4)}", "1+i", True),
    ("\\boxed{2 \\text{ cis } (\\pi/3)}", "1+\\sqrt{3}i", True),
    ("\\boxed{2 \\text{sin} (\\pi/6)}", "1", True),
    ("\\boxed{2\\operatorname{cis}\\frac{\\pi}{3}}", "1-\\sqrt3 i", False),
    ("\\boxed{2\\operatorname{cis}(\\pi/3)}", "2\\operatorname{cis}(\\pi/6)", False),
    ("\\boxed{2\\operatorname{cis}(60)}", "1+\\sqrt{3}i", False),     # 60 radians
]


def test_complex_numbers_in_polar_form():
    check(POLAR)


def test_other_digits_base_ten_minus_plus_vectors_and_cut_off_boxes():
    check(OTHER_DIGITS_AND_NOTATIONS)


def test_deeply_nested_parentheses_are_fast():
    # 20 grouping parentheses took math-verify's parser past the 2 s worker limit (False)
    t = time.monotonic()
    assert verify_math("\\boxed{" + "(" * 20 + "5" + ")" * 20 + "}", "5")
    assert verify_math("The answer is " + "(" * 3000 + "5" + ")" * 3000, "5")
    assert time.monotonic() - t < 1.0


def test_long_runs_of_blanks_inside_the_region_are_fast():
    # "[\\s*]+$" and the filler pattern's leading "\\s*" were tried at every position of a
    # long blank run that does not end the text: 1.4 s for 3000 spaces
    t = time.monotonic()
    for blank in [" " * 2990, "\n" * 2990, "\t " * 1495]:
        assert not verify_math("x" + blank + "x", "5")
        assert not verify_math("x" + blank + "x", "5", lenient=True)
    assert time.monotonic() - t < 1.0


def test_a_blank_run_after_the_anchor_word_is_fast():
    # the heading and table-row anchors had four adjacent "[ \\t]*" around an optional ":" and
    # emphasis: every split of the run was tried, 13 s for "Answer" + 500 spaces + "x"
    t = time.monotonic()
    for head in ["Answer", "Final answer", "| Answer", "**Answer**", "Ans."]:
        for tail in ["x", "x\n", "| x"]:
            mathcheck.extract_answer(head + " " * 3000 + tail)
    assert time.monotonic() - t < 1.5


def test_long_blank_runs_inside_an_answer_are_fast():
    # "\\s*\\(?\\s*" (a base in words), "\\s*[}]?\\s*" (a unit word) and a lazy value before
    # "\\s*=" (5 = x) tried every split of a blank run: 0.8 s for 5000 tabs in one box
    mathcheck.normalize_answer("1")
    t = time.monotonic()
    for blank in ["\t" * 5000, " " * 5000]:
        for tail in ["x", "= x", "(base 5", "} x", "k"]:
            mathcheck.normalize_answer("1" + blank + tail)
    assert time.monotonic() - t < 1.5                   # was 13 s


# ---------------------------------------------------------------- numbers in another base

BASES = [
    ("\\boxed{204}", "204_5", False),
    ("\\boxed{54}", "204_5", False),
    ("\\boxed{204_5}", "204", False),
    ("\\boxed{204_5}", "204_5", True),
    ("\\boxed{204_{5}}", "$204_5$", True),
    ("\\boxed{(204)_5}", "204_{5}", True),
    ("\\boxed{0204_5}", "204_5", True),
    ("\\boxed{2040_5}", "204_5", False),
    ("\\boxed{204_6}", "204_5", False),
    ("\\boxed{1112122_3}", "1112112_3", False),
    ("\\boxed{204_5}", "54", False),
    ("The answer is $204_5$.", "204_5", True),
    ("\\boxed{A3_{16}}", "A3_{16}", True),
    ("\\boxed{163}", "A3_{16}", False),
    ("\\boxed{101_{\\text{two}}}", "101_2", True),               # the base in words
    ("\\boxed{101_{\\text{three}}}", "101_2", False),
    ("\\boxed{101_{\\text{two}}}", "5", False),
    # code's prefixes and a small hexadecimal digit: the same numeral in the same base
    ("\\boxed{0b1010}", "1010_2", True),
    ("\\boxed{0o12}", "12_{(8)}", True),
    ("\\boxed{0x1F}", "1F_{16}", True),
    ("\\boxed{1f_{16}}", "1F_{16}", True),
    ("\\boxed{0b1010}", "10", False),
    ("\\boxed{0b1011}", "1010_2", False),
    ("\\boxed{0x1F}", "1F_{8}", False),
    ("\\boxed{3b_{12}}", "3B_{12}", False),                 # 3 b_{12}: no hexadecimal digit
]


def test_numbers_in_another_base_only_equal_themselves():
    check(BASES)


# ---------------------------------------------------------------- congruences
# a residue with its modulus in any spelling; against a number it is its residue as written or
# its least one, and two congruences agree when their classes do
CONGRUENCES = [
    ("\\boxed{x \\equiv 3 \\pmod{7}}", "3", True),
    ("\\boxed{x ≡ 3 (mod 7)}", "3", True),
    ("\\boxed{3 \\pmod 7}", "3", True),
    ("\\boxed{3 \\text{ mod } 7}", "3", True),
    ("\\boxed{x \\equiv 3 \\ (\\text{mod } 7)}", "x \\equiv 3 \\pmod 7", True),
    ("\\boxed{3}", "x \\equiv 3 \\pmod{7}", True),
    ("\\boxed{x \\equiv 10 \\pmod{7}}", "3", True),             # its least residue
    ("\\boxed{x \\equiv 10 \\pmod{7}}", "x \\equiv 3 \\pmod 7", True),
    ("\\boxed{x \\equiv 3 \\pmod{7}}", "4", False),
    ("\\boxed{x \\equiv 3 \\pmod{7}}", "10", False),
    ("\\boxed{x \\equiv 3 \\pmod{8}}", "x \\equiv 3 \\pmod 7", False),
    ("\\boxed{x \\equiv 4 \\pmod{7}}", "x \\equiv 3 \\pmod 7", False),
]


def test_congruences():
    check(CONGRUENCES)


# ---------------------------------------------------------------- "3, 500" is two numbers

COMMAS = [
    ("\\boxed{3, 500}", "3500", False),
    ("\\boxed{3,500}", "3500", True),
    ("\\boxed{3\\,500}", "3500", True),
    ("\\boxed{3{,}500}", "3500", True),
    ("\\boxed{3,\\!500}", "3500", True),
    ("\\boxed{3,\\! 500}", "3500", True),
    ("\\boxed{3, 500}", "3, 500", True),
    ("\\boxed{500, 3}", "3, 500", True),
    ("\\boxed{3500}", "3, 500", False),
    ("The answer is 3, 500.", "3500", False),
    ("\\boxed{12,345,678}", "12345678", True),
    ("\\boxed{12, 345, 678}", "12345678", False),
    ("\\boxed{3, 5}", "35", False),
    ("\\boxed{1, 000}", "1000", False),
]


def test_a_comma_and_a_space_separate_two_numbers():
    check(COMMAS)


# ---------------------------------------------------------------- digits apart by a space

SPACED_DIGITS = [  # "2 1/2" is a mixed number and "1 000" one number; "3 4" is never 34
    ("\\boxed{2 1/2}", "\\frac52", True),
    ("\\boxed{2 1/2}", "10.5", False),
    ("\\boxed{2 1/2}", "21/2", False),
    ("\\boxed{-1 3/4}", "-1.75", True),
    ("The answer is 3 1/2 cups.", "3.5", True),
    ("\\boxed{12 5}", "125", False),
    ("\\boxed{3 4}", "34", False),
    ("\\boxed{1 000 000}", "10^6", True),
    ("\\boxed{12 345}", "12345", True),
    ("\\boxed{\\log_2 8}", "3", True),
    ("\\boxed{3.141 592}", "3.141592", True),              # grouped decimals (SI style)
    ("\\boxed{0.000 001}", "10^{-6}", True),
    ("\\boxed{0.5 3}", "0.53", False),
    ("\\boxed{1 .5}", "1.5", False),
    # "2 and 1/2": a mixed number against one value, a list against a list
    ("\\boxed{2 and 1/2}", "\\frac52", True),
    ("\\boxed{2\\text{ and }\\frac{1}{2}}", "2.5", True),
    ("The answer is 3 and 1/4.", "13/4", True),
    ("\\boxed{5/2}", "2 and 1/2", True),
    ("\\boxed{2 and 1/2}", "2, \\frac12", True),
    ("\\boxed{2 and 1/2}", "\\{2, \\frac12\\}", True),
    ("\\boxed{2, 1/2}", "2 and 1/2", True),
    ("\\boxed{2, 1/2}", "2.5", False),                     # a comma: two numbers
    ("\\boxed{2 and 3/2}", "3.5", False),                  # not a proper fraction
    ("\\boxed{2 and 1/2}", "2", False),
    ("\\boxed{1 and a half}", "1.5", True),                 # the fraction in words
    ("\\boxed{3 and 1/4 hours}", "3.25", True),             # a unit after it
    ("\\boxed{\\text{2 and 1/2}}", "2.5", True),
    ("\\boxed{2 and 0.5}", "2.5", False),                  # a decimal: two numbers
    ("\\boxed{0 and 1/2}", "\\frac12", False),               # no whole part: two numbers
    ("\\boxed{1 and a half}", "2", False),
]


def test_digits_apart_by_a_space_are_not_joined():
    check(SPACED_DIGITS)


# ---------------------------------------------------------------- lenient mode (evaluation only)


def test_lenient_accepts_an_unanchored_final_answer_strict_does_not():
    for completion, gold in [
        ("So we get 7.", "7"),
        ("x = \\frac{1}{2}", "0.5"),
        ("$(3, 2)$", "(3,2)"),
        ("Adding them gives 12, 000 and then 40.", "40"),
        ("28 percent", "28\\%"),
        ("Therefore $x \\geq 5$ is the solution.", "[5,\\infty)"),
    ]:
        assert not verify_math(T + completion, gold), completion
        assert verify_math(T + completion, gold, lenient=True), completion


def test_lenient_near_misses():
    assert not verify_math("So we get 8.", "7", lenient=True)
    assert not verify_math("We had 7 before, and now it is 9", "7", lenient=True)  # the last number
    assert not verify_math(
        "\\boxed{5}. Also 7 appears here.", "7", lenient=True
    )  # a box still wins
    assert not verify_math("It is 7 or 8", "7", lenient=True)
    assert not verify_math("<think>so 7", "7", lenient=True)  # never finished
    assert not verify_math("We get 7. Wait, I made an error.", "7", lenient=True)


def test_rewards_stay_strict():
    import rewards

    assert rewards.math_reward("So we get 7.", {"answer": "7"}) == 0.0
    assert rewards.math_reward("So we get \\boxed{7}.", {"answer": "7"}) == 1.0


def test_evaluate_lenient_flag_reaches_the_checker(tokenizer):
    import engines
    import evaluate

    tasks = [
        {"id": "a", "prompt": "2+5?", "answer": "7"},
        {"id": "b", "prompt": "3+5?", "answer": "8"},
    ]

    class Scripted:
        def generate(self, prompts, params):
            return [
                engines.Completion(0, [], [1], "<think>\nx\n</think>\n\nSo we get 7.", False),
                engines.Completion(1, [], [1], "<think>\nx\n</think>\n\n\\boxed{8}", False),
            ]

    strict = evaluate.evaluate_model(None, tokenizer, tasks, engine=Scripted())["metrics"]
    lenient = evaluate.evaluate_model(None, tokenizer, tasks, engine=Scripted(), lenient=True)[
        "metrics"
    ]
    assert strict["accuracy"] == 0.5 and lenient["accuracy"] == 1.0
    assert evaluate.Config().lenient is False
    import cli

    assert cli.parse(evaluate.Config, ["--lenient"]).lenient is True


# ---------------------------------------------------------------- bench/mathverify_suite.py


def test_peer_suite_cases_are_read_from_parametrize_tables_and_literal_asserts():
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    import mathverify_suite

    src = """
import math, pytest
@pytest.mark.parametrize("gold,pred,expected", [("$1$", "\\\\boxed{1}", 1), ("$2$", "3", 0)])
def test_a(gold, pred, expected):
    assert compare_strings(gold, pred, match_types=["latex"]) == expected
@pytest.mark.parametrize("gold, pred, expected", [(f"{math.sqrt(4):.1f}", "$2$", 1)])
def test_b(gold, pred, expected):
    assert compare_strings(gold, pred, precision=5) == expected
@pytest.mark.parametrize(["gold", "pred", "result"], [("$x$", "$x$", 1)])
def test_c(gold, pred, result):
    assert int(verify(parse(gold), parse(pred))) == result
def test_d():
    assert compare_strings("$\\\\frac{1}{3}$", "0.3333", precision=4) == 1
def test_e():
    assert 1 + 1 == 2
"""
    cases, skipped = mathverify_suite.extract_cases({"tests/test_x.py": src})
    got = [(c.where.split("::")[1], c.gold, c.pred, c.expected, c.options) for c in cases]
    assert got == [
        ("test_a[0]", "$1$", "\\boxed{1}", True, {}),
        ("test_a[1]", "$2$", "3", False, {}),
        ("test_b[0]", "2.0", "$2$", True, {"precision": 5}),
        ("test_c[0]", "$x$", "$x$", True, {}),
        ("test_d[line 13]", "$\\frac{1}{3}$", "0.3333", True, {"precision": 4}),
    ]
    assert skipped == ["tests/test_x.py::test_e"]
