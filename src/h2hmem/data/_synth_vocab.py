"""Word pools of the synthetic H2HMem generator: names, places, products, habits, fillers.

Everything a synthetic conversation can say comes from these pools, so a question about a
pool that the generator never uses (``NEVER_SAID``, ``NEVER_OWNED``) is guaranteed to be
unanswerable (Answer Refusal). Nothing here is random; :mod:`._synth_world` samples from it.
"""

from __future__ import annotations

DYADIC_NAMES = (
    "Xu Huaian",
    "Lin Shuying",
    "Chen Yutong",
    "Zhao Mingyu",
    "Wang Lihua",
    "Liu Jiaqi",
    "Sun Haoran",
    "Zhou Xinyi",
    "Wu Zihan",
    "Zheng Yiming",
    "Huang Ruoxi",
    "He Junjie",
    "Gao Wenjing",
    "Ma Tianyu",
    "Luo Siyuan",
    "Song Jiayi",
    "Tang Yichen",
    "Han Meiling",
    "Feng Zhiyuan",
    "Deng Qiaoyu",
    "Cao Yuxuan",
    "Peng Shuhan",
    "Xie Mingzhe",
    "Jiang Ruolan",
    "Yuan Kaiwen",
    "Pan Yuqing",
    "Du Chenxi",
    "Ye Zhenhua",
    "Cheng Anqi",
    "Wei Haoyu",
    "Lu Xiaoman",
    "Shen Yifan",
    "Fang Jingwen",
    "Qin Zhaolin",
    "Tian Yuhan",
    "Hu Lanxin",
    "Guo Chengyu",
    "Kong Meixuan",
    "Yao Zhenyu",
    "Bai Shiyun",
)
"""Full names for two-speaker dialogues (pinyin, as in the public dyadic files)."""

GROUP_NAMES = (
    "Una",
    "Vivi",
    "Chloe",
    "Mia",
    "Nina",
    "Leo",
    "Max",
    "Ivy",
    "Zoe",
    "Kai",
    "Ruby",
    "Owen",
    "Luna",
    "Eli",
    "Ada",
    "Finn",
    "Iris",
    "Jade",
    "Noah",
    "Tess",
    "Hugo",
    "Lily",
    "Omar",
    "Rosa",
    "Sam",
    "Wren",
    "Yuki",
    "Theo",
    "Cora",
    "Dev",
)
"""Nicknames for group chats (4–6 speakers, as in the public multi-party files)."""

GROUPS = (
    "Foodies",
    "Shopaholics",
    "Hikers",
    "BookClub",
    "PetLovers",
    "GymBuddies",
    "Travelers",
    "HomeDIY",
    "Gamers",
    "PlantParents",
)
"""Group-chat names; ``group_id`` is ``G<NN>_<name>``."""

THEMES = (
    ("food", "饮食", "Food Diaries"),
    ("health", "健康", "Healthy Habits"),
    ("travel", "旅行", "Weekend Trips"),
    ("shopping", "购物", "Smart Shopping"),
    ("pets", "宠物", "Pet Life"),
    ("home", "家居", "Home Projects"),
    ("study", "学习", "Learning Together"),
    ("sport", "运动", "Staying Active"),
)
"""(session_id prefix, Chinese theme word, English title stem) of a dyadic dialogue."""

DATE_SUFFIXES = (" 上午", " 下午", " (extra)", " ", " (weekend)")
"""Extra text after some ``timeline_date`` values, as the public files have ("2025-01-01 上午")."""

PET_KINDS = ("cat", "dog", "rabbit", "parrot", "hamster", "turtle")
PET_NAMES = (
    "Mochi",
    "Biscuit",
    "Pudding",
    "Tofu",
    "Pepper",
    "Maple",
    "Noodle",
    "Coco",
    "Dumpling",
    "Snowball",
    "Peanut",
    "Bean",
    "Mango",
    "Olive",
    "Sesame",
    "Ginger",
    "Cookie",
    "Muffin",
    "Pumpkin",
    "Kiwi",
)

STORES = (
    "Jingxi Mart",
    "Greenleaf Market",
    "Sunrise Mall",
    "Harbor Outlet",
    "Bluebird Store",
    "Maple Home",
    "Lotus Plaza",
    "Pinecone Shop",
    "Riverside Depot",
    "Cloudnine Digital",
)
PRODUCTS = (
    # (name, lowest price, highest price) in yuan
    ("rice cooker", 180, 520),
    ("yoga mat", 60, 240),
    ("desk lamp", 80, 300),
    ("air purifier", 600, 1900),
    ("pair of running shoes", 300, 900),
    ("backpack", 120, 480),
    ("coffee grinder", 150, 650),
    ("bookshelf", 260, 900),
    ("electric kettle", 90, 260),
    ("wool sweater", 200, 700),
    ("blender", 160, 600),
    ("umbrella", 40, 150),
    ("humidifier", 120, 420),
    ("office chair", 400, 1500),
    ("water bottle", 30, 120),
    ("pair of headphones", 200, 1200),
    ("winter coat", 500, 2200),
    ("storage box", 25, 90),
    ("plant pot", 20, 80),
    ("tea set", 150, 800),
)
NEVER_OWNED = (
    "electric scooter",
    "espresso machine",
    "drone",
    "telescope",
    "sewing machine",
    "kayak",
    "accordion",
    "3D printer",
    "pressure washer",
    "chess clock",
)
"""Things no synthetic turn ever mentions: questions about them are Answer Refusal."""

EVENTS = (
    ("jazz concert", "Riverside Hall"),
    ("photography exhibition", "City Art Museum"),
    ("stand-up comedy show", "Lantern Theatre"),
    ("football match", "North Stadium"),
    ("ballet performance", "Grand Opera House"),
    ("film festival screening", "Starlight Cinema"),
    ("science lecture", "Harbor Library"),
    ("food fair", "Old Town Square"),
    ("flower show", "Botanical Garden"),
    ("folk music night", "Willow Club"),
)
"""(event, venue) pairs for ticket and poster images."""

RESTAURANTS = (
    "Golden Wok",
    "Little Sichuan",
    "Noodle House 88",
    "Harbor Dim Sum",
    "Green Bowl",
    "Old Street Hotpot",
    "Sakura Ramen",
    "Lakeside Grill",
)
DISHES = (
    "mapo tofu",
    "kung pao chicken",
    "beef noodles",
    "shrimp dumplings",
    "sweet and sour pork",
    "steamed fish",
    "mushroom soup",
    "fried rice",
    "spring rolls",
    "eggplant claypot",
    "dan dan noodles",
    "scallion pancake",
)

APPS = (
    # (app, what it tracks, screenshot label, value format, question about the value, reminder, value range)
    (
        "StepPal",
        "my daily walking",
        "Steps today",
        "{v}",
        "how many steps were shown for that day",
        "stand up and walk",
        (4000, 15000),
    ),
    (
        "SleepWell",
        "my sleep",
        "Sleep last night",
        "{v} min",
        "how long was the sleep shown",
        "go to bed before eleven",
        (300, 540),
    ),
    (
        "BudgetBee",
        "my spending",
        "Budget left",
        "{v} yuan",
        "how much budget was left",
        "check the receipts",
        (100, 3000),
    ),
    (
        "ReadMore",
        "my reading",
        "Pages this week",
        "{v}",
        "how many pages were shown for the week",
        "read before bed",
        (20, 400),
    ),
    (
        "HydroMate",
        "how much water I drink",
        "Water today",
        "{v} ml",
        "how much water was shown for that day",
        "drink a glass of water",
        (800, 2600),
    ),
    (
        "FocusTree",
        "my study time",
        "Focus time",
        "{v} min",
        "how much focus time was shown",
        "put the phone away",
        (30, 300),
    ),
)
CARRIERS = ("SF Express", "JD Logistics", "YTO Express", "ZTO Express")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

HABITS = (
    # (stated habit, situation for the other speaker, applied answer: a substring of the stated habit)
    (
        "whenever I can't fall asleep, I drink a glass of warm milk",
        "can't fall asleep tonight",
        "drink a glass of warm milk",
    ),
    (
        "when it rains I take the subway instead of cycling",
        "has to get to work on a rainy morning",
        "take the subway instead of cycling",
    ),
    (
        "before any long trip I pack a power bank and a paper map",
        "is packing for a long trip",
        "pack a power bank and a paper map",
    ),
    (
        "when my eyes get tired I look out of the window for twenty seconds",
        "has tired eyes after hours of screen work",
        "look out of the window for twenty seconds",
    ),
    (
        "whenever I feel stressed I take a ten-minute walk around the block",
        "feels stressed before a deadline",
        "take a ten-minute walk around the block",
    ),
    (
        "when I cook, I always rinse the rice three times first",
        "is about to cook rice",
        "rinse the rice three times first",
    ),
    (
        "whenever I buy something expensive I wait three days before ordering",
        "wants to buy an expensive camera",
        "wait three days before ordering",
    ),
    ("when I get a cold I drink ginger tea with honey", "caught a cold", "drink ginger tea with honey"),
    ("before an exam I review notes with flash cards", "has an exam next week", "review notes with flash cards"),
    (
        "when my plants look dry I water them in the early morning",
        "sees that the plants look dry",
        "water them in the early morning",
    ),
    (
        "whenever I run in the evening I stretch for ten minutes afterwards",
        "just finished an evening run",
        "stretch for ten minutes",
    ),
    ("when I travel by train I always book a window seat", "is booking a train ticket", "book a window seat"),
    (
        "when I can't decide what to cook I make tomato and egg stir-fry",
        "can't decide what to cook for dinner",
        "make tomato and egg stir-fry",
    ),
    (
        "whenever I get a headache I turn off the screen and rest for a while",
        "has a headache at the office",
        "turn off the screen and rest for a while",
    ),
    ("before a job interview I rehearse answers out loud", "has a job interview tomorrow", "rehearse answers out loud"),
    ("when I feel homesick I video-call the family", "feels homesick", "video-call the family"),
    ("whenever my room gets messy I tidy it for fifteen minutes", "has a messy room", "tidy it for fifteen minutes"),
    (
        "when I miss the bus I walk to the next stop instead of waiting",
        "just missed the bus",
        "walk to the next stop instead of waiting",
    ),
    (
        "before going hiking I check the weather forecast the night before",
        "plans a hike this weekend",
        "check the weather forecast the night before",
    ),
    ("whenever I learn a new word I write it on a sticky note", "is learning new words", "write it on a sticky note"),
)

KR_ITEMS = (
    # (subject phrase, intro template, update template, values (first, later...)): see _synth_episodes.KrItem
    (
        "gym membership fee",
        "my gym membership costs {v} a month",
        "the gym raised the fee, it's {v} a month now",
        ("200 yuan", "260 yuan", "300 yuan", "180 yuan", "240 yuan"),
    ),
    (
        "morning run distance",
        "I run {v} every morning",
        "I changed my morning run, it's {v} now",
        ("3 km", "5 km", "4 km", "6 km", "7 km"),
    ),
    (
        "phone model",
        "I'm using a {v} at the moment",
        "I replaced my phone, now it's a {v}",
        ("Huawei P60", "Xiaomi 14", "iPhone 15", "Honor 90", "Oppo Find X7"),
    ),
    (
        "rent",
        "my rent is {v} per month",
        "the landlord changed my rent to {v} per month",
        ("3200 yuan", "3500 yuan", "2800 yuan", "3900 yuan", "4100 yuan"),
    ),
    (
        "commute",
        "I get to work by {v}",
        "I switched my commute, I now go by {v}",
        ("bus", "bicycle", "subway", "car", "electric bike"),
    ),
    (
        "weekly swimming sessions",
        "I swim {v} a week",
        "I'm now swimming {v} a week",
        ("twice", "three times", "once", "four times"),
    ),
    (
        "piano practice time",
        "I practise piano {v} a day",
        "I practise piano {v} a day now",
        ("20 minutes", "45 minutes", "30 minutes", "an hour"),
    ),
)

NEVER_SAID = (
    "blood type",
    "shoe size",
    "dentist's name",
    "car licence plate number",
    "favourite football team",
    "grandmother's hometown",
    "primary school's name",
    "childhood nickname",
    "wedding anniversary date",
    "Wi-Fi password",
    "bank's name",
    "height in centimetres",
    "first car's brand",
    "favourite poet",
    "landlord's name",
    "neighbour's name",
    "high school maths teacher's name",
    "zodiac sign",
)
"""Personal attributes no synthetic turn ever states: questions about them are Answer Refusal."""

DYADIC_FILLERS = (
    "How has your week been so far?",
    "Pretty busy, but I'm managing. Work has been hectic lately.",
    "I know the feeling. Let's catch up properly this weekend.",
    "Sounds good to me.",
    "By the way, did you sleep well last night?",
    "Not bad, thanks for asking.",
    "The weather has been changing so quickly these days.",
    "True, I never know what to wear.",
    "I've been trying to spend less time on my phone.",
    "That's a good idea, I should do the same.",
    "Anyway, tell me more about your plans.",
    "Nothing special, just the usual routine.",
    "Haha, that reminds me of last year.",
    "Time really flies, doesn't it?",
    "Let me know if you need any help.",
    "Thanks, I appreciate it.",
    "Have you eaten yet?",
    "Just finished lunch, it was nothing fancy.",
    "Talk to you later then!",
    "Sure, take care.",
    "I feel like I've been running around all day.",
    "Take it easy, you deserve a break.",
    "My family says hello, by the way.",
    "Please say hi to them from me too.",
)
GROUP_FILLERS = (
    "Morning everyone!",
    "Haha, this group is so lively today.",
    "Agreed, totally.",
    "Same here.",
    "Sorry, I was in a meeting, catching up now.",
    "Wow, so many messages.",
    "Let's keep going, this is fun.",
    "I'm taking notes, this is useful.",
    "Good point.",
    "Count me in.",
    "Back now, what did I miss?",
    "Love this group.",
    "That's a good idea.",
    "I was thinking the same thing.",
    "Anyone else online?",
    "Off to make some tea, brb.",
    "Great, thanks for sharing.",
    "True, I hadn't thought of that.",
    "Let's plan something together soon.",
    "Ha, that's so relatable.",
)

TYPE_NOTES = {
    "UPR": "Recall plain text facts, avoiding generic responses.",
    "CRR": "Recall a fact visible only in the shared image, tied to the text about the same event.",
    "KR": "Track a value that was updated in a later session; the latest value is the answer.",
    "TR": "Order or date events using the session dates and turn order.",
    "MCR": "Text-driven image response, focusing on causal inference.",
    "RET": "Track the evolution and reference chain of the same topic across multiple rounds of conversation.",
    "TTL": "Apply a habit stated in the conversation to a new situation.",
    "CD": "Decide whether a new statement contradicts the conversation; answer yes or no.",
    "AR": "The information was never mentioned; the correct response is a refusal.",
}
"""``validation_notes`` per task type (wording follows the public files)."""
